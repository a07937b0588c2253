//! Python exceptions: `CompileError` for a program with errors (carrying its diagnostics),
//! `RunError` for a backend that cannot plan, compile or run, `ValueError` for a bad request.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tessera::Error;
use tessera::ir::{Diagnostic, Severity};
use tessera::runtime::BackendError;

create_exception!(
    tessera,
    TesseraError,
    PyException,
    "Every error Tessera raises of its own."
);
create_exception!(
    tessera,
    CompileError,
    TesseraError,
    "The program has errors: `diagnostics` (line, column, message, ...), `line`, `column` and `message` of the first, `rendered` (the text the command line prints)."
);
create_exception!(
    tessera,
    RunError,
    TesseraError,
    "A backend could not plan, compile or run the program: `exit_code` is the command line's (1: the request or the machine, 2: Tessera itself)."
);

/// The Python exception for a facade error.
pub fn to_py(error: Error) -> PyErr {
    match &error {
        Error::Program {
            text, diagnostics, ..
        } => Python::attach(|py| compile_error(py, &error, text, diagnostics)),
        Error::ReadProgram { source, .. } => {
            PyErr::from(std::io::Error::new(source.kind(), error.to_string()))
        }
        Error::Usage(message) | Error::Backend(BackendError::InvalidOptions(message)) => {
            PyValueError::new_err(message.clone())
        }
        _ => Python::attach(|py| run_error(py, &error)),
    }
}

/// `CompileError` with the rendered text and each diagnostic as a dict.
fn compile_error(py: Python<'_>, error: &Error, text: &str, diagnostics: &[Diagnostic]) -> PyErr {
    let exception = CompileError::new_err(error.to_string());
    let described = (|| -> PyResult<()> {
        let value = exception.value(py);
        let list = diagnostics
            .iter()
            .map(|d| diagnostic_dict(py, text, d))
            .collect::<PyResult<Vec<_>>>()?;
        if let Some(first) = list.first() {
            for key in ["line", "column", "message"] {
                value.setattr(key, first.get_item(key)?)?;
            }
        }
        value.setattr("diagnostics", list)?;
        value.setattr("rendered", error.to_string())?;
        Ok(())
    })();
    described.err().unwrap_or(exception)
}

/// `{"line", "column", "message", "code", "severity", "help"}` of one diagnostic (1-based
/// line and column of its primary label; 0 when it has none).
fn diagnostic_dict<'py>(
    py: Python<'py>,
    text: &str,
    diagnostic: &Diagnostic,
) -> PyResult<Bound<'py, PyDict>> {
    let primary = (diagnostic.labels.iter())
        .find(|l| l.primary)
        .or(diagnostic.labels.first());
    let (line, column) = primary.map_or((0, 0), |l| line_column(text, l.span.start as usize));
    let dict = PyDict::new(py);
    dict.set_item("line", line)?;
    dict.set_item("column", column)?;
    dict.set_item("message", &diagnostic.message)?;
    dict.set_item("code", diagnostic.code)?;
    let severity = match diagnostic.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    dict.set_item("severity", severity)?;
    dict.set_item("help", diagnostic.help.as_deref())?;
    Ok(dict)
}

/// The 1-based line and column (in characters) of byte `offset` of `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

/// `RunError` with the command line's exit code.
fn run_error(py: Python<'_>, error: &Error) -> PyErr {
    let exception = RunError::new_err(error.to_string());
    match exception.value(py).setattr("exit_code", error.exit_code()) {
        Ok(()) => exception,
        Err(e) => e,
    }
}

/// `Result<T, tessera::Error>` into `PyResult<T>`.
pub trait IntoPy<T> {
    /// The value, or the error as a Python exception.
    fn py_err(self) -> PyResult<T>;
}

impl<T, E: Into<Error>> IntoPy<T> for Result<T, E> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(|e| to_py(e.into()))
    }
}
