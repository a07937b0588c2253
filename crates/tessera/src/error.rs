//! Every failure of the facade, how it is shown and which exit code it gives.

use std::path::PathBuf;

use tessera_ir::Diagnostic;
use tessera_ir::escape::terminal_text;
use tessera_runtime::BackendError;

/// A failure loading, binding, running a program or moving its fields.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The program file could not be read.
    #[error("cannot read program {}: {source}", path.display())]
    ReadProgram {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The program (or a `--set` value) has errors; rendered against its source.
    #[error("{}", tessera_lang::render(diagnostics, file_name, text, false))]
    Program {
        /// Name of the source shown in the rendering.
        file_name: String,
        /// The source text.
        text: String,
        /// What is wrong.
        diagnostics: Vec<Diagnostic>,
    },
    /// A field file could not be read or written.
    #[error(transparent)]
    File(#[from] tessera_io::IoError),
    /// The backend refused or failed.
    #[error("{0}")]
    Backend(#[from] BackendError),
    /// A plan file could not be read or is not a plan.
    #[error("cannot use plan {}: {message}", path.display())]
    PlanFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A bad request: unknown backend or field, malformed flag value.
    #[error("{0}")]
    Usage(String),
}

impl Error {
    /// The process exit code: 1 for the user's errors, 2 for Tessera's (generated code that does
    /// not compile, a failing device run).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Backend(BackendError::Compile(_) | BackendError::Runtime(_)) => 2,
            _ => 1,
        }
    }

    /// The message for a terminal: diagnostics rendered (in colour when `color`), others as
    /// one `error: ...` line; control characters of user text (file names, field names) are
    /// shown escaped.
    pub fn render(&self, color: bool) -> String {
        match self {
            Error::Program {
                file_name,
                text,
                diagnostics,
            } => tessera_lang::render(diagnostics, file_name, text, color),
            Error::Backend(e @ (BackendError::Compile(_) | BackendError::Runtime(_))) => {
                format!(
                    "internal error: {}\nthis is a bug in Tessera; please report it with the program and the command line\n",
                    terminal_text(&e.to_string())
                )
            }
            other => format!("error: {}\n", terminal_text(&other.to_string())),
        }
    }
}
