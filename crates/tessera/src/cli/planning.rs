//! The backend and plan a command uses: the plan file `--plan` names, else the tuning
//! database's plan for the program, size and device when the flags leave the plan open
//! ([`ExecArgs::uses_tuned`]), else the backend's plan for the flags. Every command goes
//! through the `Backend` trait: no switch on names here.

use tessera::tuning::{TuningDb, TuningEntry, tuned_plan};
use tessera::{DeviceSelection, Error, Plan, PlanRequest, Session};
use tessera_ir::escape::terminal_text;
use tessera_runtime::{Backend, Executable, MemoryEstimate};

use super::args::ExecArgs;
use super::progress::CompileSpinner;
use super::usage;

/// The backend a command uses when neither `--backend` nor a plan file names one.
#[derive(Clone, Copy, Debug)]
pub enum DefaultBackend {
    /// The host's: `cpu`, or `reference` with a warning when no C compiler works.
    Host,
    /// This one.
    Named(&'static str),
}

impl DefaultBackend {
    /// The backend's name; a fallback of the host's default is reported on stderr.
    pub fn resolve(self) -> &'static str {
        match self {
            DefaultBackend::Named(name) => name,
            DefaultBackend::Host => {
                let choice = tessera::default_backend();
                if let Some(why) = choice.fallback {
                    eprintln!("warning: {}", terminal_text(&why));
                }
                choice.name
            }
        }
    }
}

/// A backend with the plan to run, and the device to run it on.
pub struct Planned {
    /// The backend.
    pub backend: Box<dyn Backend>,
    /// Its name.
    pub name: &'static str,
    /// The plan.
    pub plan: Plan,
    /// The device the plan is for.
    pub device: DeviceSelection,
    /// The tuning database's entry, when the plan came from it.
    pub tuned: Option<TuningEntry>,
    /// `--max-memory`.
    pub max_memory: Option<u64>,
}

impl Planned {
    /// The memory a run of the plan needs.
    pub fn memory(&self, session: &Session) -> Result<MemoryEstimate, Error> {
        Ok(self
            .backend
            .memory(session.bound(), &self.plan, &self.device)?)
    }

    /// Compiles the plan for `session` (a spinner names it when that takes over a second),
    /// after checking that its memory fits `--max-memory` and what the machine has available.
    pub fn prepare(&self, session: &Session) -> Result<Box<dyn Executable>, Error> {
        session.check_memory(
            self.backend.as_ref(),
            &self.plan,
            &self.device,
            self.max_memory,
        )?;
        let _spinner =
            CompileSpinner::start(format!("compiling {} for {}", session.name(), self.name));
        session.prepare(self.backend.as_ref(), &self.plan, &self.device)
    }
}

/// The backend and plan of `exec` for `session`: the `--plan` file's (whose backend must
/// agree with `--backend` when both are given), else the tuning database's for the key when
/// the flags leave the plan open, else the backend's plan for the flags, with
/// `default_backend` when neither `--backend` nor a plan file names one, and `device` when
/// `--device` does not.
pub fn plan(
    session: &Session,
    exec: &ExecArgs,
    default_backend: DefaultBackend,
    device: DeviceSelection,
) -> Result<Planned, Error> {
    let device = match &exec.device {
        Some(name) => DeviceSelection::Named(name.clone()),
        None => device,
    };
    let mut tuned = None;
    let (backend, plan) = match &exec.plan {
        Some(path) => {
            let plan = read_plan(path)?;
            if let Some(named) = exec
                .backend
                .as_deref()
                .filter(|b| *b != plan.backend_name())
            {
                return Err(usage(format!(
                    "the plan {} is for the {} backend, not `{named}`; drop `--backend` (or `TESSERA_BACKEND`)",
                    path.display(),
                    plan.backend_name()
                )));
            }
            (tessera::backend(plan.backend_name())?, plan)
        }
        None => {
            let name = match exec.backend.as_deref() {
                Some(name) => name,
                None => default_backend.resolve(),
            };
            let backend = tessera::backend(name)?;
            let request = exec.request(device.clone());
            tuned = (exec.uses_tuned())
                .then(|| lookup_tuned(session, backend.name(), &request))
                .flatten();
            let plan = match &tuned {
                Some(entry) => entry.plan.clone(),
                None => session.plan(backend.as_ref(), &request)?,
            };
            (backend, plan)
        }
    };
    Ok(Planned {
        name: backend.name(),
        backend,
        plan,
        device,
        tuned,
        max_memory: exec.max_memory,
    })
}

/// The tuning database's entry for `session` on `backend` with `request`; notes on entries
/// not used (a damaged database, a plan that no longer fits) go to stderr.
fn lookup_tuned(session: &Session, backend: &str, request: &PlanRequest) -> Option<TuningEntry> {
    let (entry, notes) = tuned_plan(&TuningDb::open_default(), session, backend, request);
    for note in notes {
        eprintln!("note: {}", terminal_text(&note));
    }
    entry
}

/// The backend and plan of `exec` for a run: on the default backend and device unless the
/// flags or the plan file name others.
pub fn plan_run(session: &Session, exec: &ExecArgs) -> Result<Planned, Error> {
    plan(
        session,
        exec,
        DefaultBackend::Host,
        DeviceSelection::Default,
    )
}

/// Reads a plan file.
fn read_plan(path: &std::path::Path) -> Result<Plan, Error> {
    let failed = |message: String| Error::PlanFile {
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
    Plan::from_json(&text).map_err(|e| failed(e.to_string()))
}
