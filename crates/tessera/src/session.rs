//! A program loaded from text, checked and bound to `--set` values: its fields by name, its
//! initial values, and preparation on a backend.

use std::path::Path;
use std::sync::Arc;

use tessera_analysis::{BoundProgram, FieldRole, bind, parse_param_value};
use tessera_ir::{Diagnostic, Program, ScalarType};
use tessera_plan::{DeviceSelection, Plan, PlanRequest};
use tessera_runtime::memory::available_host_bytes;
use tessera_runtime::{Backend, Buffer, Executable, FieldSet, MemoryEstimate};

use crate::error::Error;

/// A field as the user names it: a scalar field (`u`, `E.ex`) or a whole struct/vector field
/// (`E`, `img`) with its components.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRef {
    /// The name as written.
    pub name: String,
    /// Field indices of the components, in order (one for a scalar field).
    pub components: Vec<usize>,
    /// Element type of each component.
    pub types: Vec<ScalarType>,
}

/// How many warnings a program's rendering shows in full (a generated program can have one
/// per stencil weight).
pub const WARNINGS_SHOWN: usize = 3;

/// A checked program bound to parameter values, with the source it came from.
#[derive(Clone, Debug)]
pub struct Session {
    file_name: String,
    text: String,
    bound: BoundProgram,
    type_overrides: Vec<String>,
}

/// Splits a `--set NAME=VALUE` argument.
pub fn parse_set(text: &str) -> Result<(String, String), Error> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.trim().to_string()))
        }
        _ => Err(Error::Usage(format!(
            "`{text}` is not of the form NAME=VALUE (e.g. `--set N=1024`)"
        ))),
    }
}

impl Session {
    /// Reads, checks and binds the program in `path`; `sets` replace type aliases and
    /// parameter defaults (`("N", "1024")`, `("real", "f64")`).
    pub fn load(path: &Path, sets: &[(String, String)]) -> Result<Session, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::ReadProgram {
            path: path.to_path_buf(),
            source,
        })?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "program".into());
        Session::from_text(&text, &path.display().to_string(), &stem, sets)
    }

    /// Checks and binds program `text`, shown as `file_name` in diagnostics and named
    /// `default_name` unless it says `program NAME;`.
    pub fn from_text(
        text: &str,
        file_name: &str,
        default_name: &str,
        sets: &[(String, String)],
    ) -> Result<Session, Error> {
        let diagnostics = |diagnostics: Vec<Diagnostic>| Error::Program {
            file_name: file_name.to_string(),
            text: text.to_string(),
            diagnostics,
        };
        let parsed = tessera_lang::parse(text, default_name, sets).map_err(diagnostics)?;
        let checked = tessera_analysis::check(&parsed.program).map_err(diagnostics)?;
        let type_overrides = parsed.type_overrides_used;
        let mut values = Vec::new();
        let mut errors = Vec::new();
        for (name, value) in sets
            .iter()
            .filter(|(name, _)| !type_overrides.contains(name))
        {
            match parse_param_value(checked.program(), name, value) {
                Ok(constant) => values.push((name.clone(), constant)),
                Err(d) => errors.push(d),
            }
        }
        if !errors.is_empty() {
            return Err(diagnostics(errors));
        }
        let bound = bind(Arc::new(checked), &values).map_err(diagnostics)?;
        Ok(Session {
            file_name: file_name.to_string(),
            text: text.to_string(),
            bound,
            type_overrides,
        })
    }

    /// The checker's warnings rendered for a terminal (in colour when `color`), if any: the
    /// first [`WARNINGS_SHOWN`] in full, then how many more there are.
    pub fn rendered_warnings(&self, color: bool) -> Option<String> {
        let warnings = self.bound.checked().warnings();
        if warnings.is_empty() {
            return None;
        }
        let shown = &warnings[..warnings.len().min(WARNINGS_SHOWN)];
        let mut text = tessera_lang::render(shown, &self.file_name, &self.text, color);
        if warnings.len() > shown.len() {
            let more = warnings.len() - shown.len();
            text.push_str(&format!(
                "warning: {more} more warning{} like these in {}\n",
                if more == 1 { "" } else { "s" },
                tessera_ir::escape::terminal_text(&self.file_name)
            ));
        }
        Some(text)
    }

    /// The bound program backends run.
    pub fn bound(&self) -> &BoundProgram {
        &self.bound
    }

    /// The (elaborated) program.
    pub fn program(&self) -> &Program {
        self.bound.program()
    }

    /// The program's name.
    pub fn name(&self) -> &str {
        &self.program().name
    }

    /// The source text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The source's name in diagnostics.
    pub fn file_name(&self) -> &str {
        &self.file_name
    }

    /// The type aliases a `--set` replaced.
    pub fn type_overrides(&self) -> &[String] {
        &self.type_overrides
    }

    /// The program's default step count (`steps N;`), 1 when it has none.
    pub fn default_steps(&self) -> u64 {
        self.program().default_steps.unwrap_or(1)
    }

    /// The grid as `4096x4096`.
    pub fn grid_text(&self) -> String {
        tessera_io::describe::grid(&self.bound.extents)
    }

    /// The element types of the fields the step updates, e.g. `f32` or `f32, i32`.
    pub fn updated_types_text(&self) -> String {
        let mut types: Vec<ScalarType> = self
            .program()
            .fields
            .iter()
            .filter(|(id, _)| self.bound.checked().role(*id) == FieldRole::Updated)
            .map(|(_, f)| f.ty)
            .collect();
        types.sort();
        types.dedup();
        types
            .iter()
            .map(|t| t.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The index of the input table named `name`, if the program declares one.
    pub fn table(&self, name: &str) -> Option<usize> {
        self.program().table_by_name(name).map(|id| id.index())
    }

    /// Looks up a field or a struct/vector field by name; unknown names get a "did you mean".
    pub fn field(&self, name: &str) -> Result<FieldRef, Error> {
        let program = self.program();
        let components = if let Some(id) = program.field_by_name(name) {
            vec![id]
        } else if let Some((_, group)) = program.groups.iter().find(|(_, g)| g.name == name) {
            group.components.clone()
        } else {
            let candidates: Vec<&str> = program
                .fields
                .values()
                .map(|f| f.name.as_str())
                .chain(program.groups.values().map(|g| g.name.as_str()))
                .collect();
            let help = match tessera_ir::diagnostic::did_you_mean(name, candidates.iter().copied())
            {
                Some(close) => format!("did you mean `{close}`?"),
                None => format!(
                    "its fields are {}",
                    candidates
                        .iter()
                        .map(|c| format!("`{c}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            return Err(Error::Usage(format!(
                "program `{}` has no field `{name}`; {help}",
                program.name
            )));
        };
        Ok(FieldRef {
            name: name.to_string(),
            types: components.iter().map(|&id| program.fields[id].ty).collect(),
            components: components.iter().map(|id| id.index()).collect(),
        })
    }

    /// The field outputs default to: the first field the step updates, else the first field.
    pub fn main_field(&self) -> FieldRef {
        let program = self.program();
        let id = program
            .fields
            .ids()
            .find(|id| self.bound.checked().role(*id) == FieldRole::Updated)
            .or_else(|| program.fields.ids().next());
        let name = id
            .map(|id| program.fields[id].name.clone())
            .unwrap_or_default();
        let components: Vec<usize> = id.into_iter().map(|id| id.index()).collect();
        FieldRef {
            name,
            types: id.into_iter().map(|id| program.fields[id].ty).collect(),
            components,
        }
    }

    /// Storage for every field: the declared initial values, except for the fields in
    /// `given` (field indices), which are left zero for the caller to fill; an error when the
    /// allocator has no room for them.
    pub fn initial_fields(&self, given: &[usize]) -> Result<FieldSet, Error> {
        let mut mask = vec![false; self.program().fields.len()];
        for &index in given {
            mask[index] = true;
        }
        Ok(tessera_reference::initial_fields(&self.bound, &mask)?)
    }

    /// Storage for every field: `supplied[field index]` where given (moved in: lent storage
    /// stays lent), the declared initial values elsewhere; an error naming the field when a
    /// supplied buffer has another type or length than the field.
    pub fn fields_with(&self, supplied: Vec<Option<Buffer>>) -> Result<FieldSet, Error> {
        Ok(tessera_reference::initial_fields_with(
            &self.bound,
            supplied,
        )?)
    }

    /// The plan `backend` would run the program with for `request`.
    pub fn plan(&self, backend: &dyn Backend, request: &PlanRequest) -> Result<Plan, Error> {
        Ok(backend.plan(&self.bound, request)?)
    }

    /// The memory a run of `plan` needs, checked against `limit` (`--max-memory`) and what this
    /// process may still allocate: a run that would not fit is refused before compiling or
    /// allocating anything.
    pub fn check_memory(
        &self,
        backend: &dyn Backend,
        plan: &Plan,
        device: &DeviceSelection,
        limit: Option<u64>,
    ) -> Result<MemoryEstimate, Error> {
        let estimate = backend.memory(&self.bound, plan, device)?;
        estimate.check(limit, available_host_bytes())?;
        Ok(estimate)
    }

    /// Compiles the program under `plan` on `backend` (on the device `device` selects), after
    /// checking that the plan fits the program and the device.
    pub fn prepare(
        &self,
        backend: &dyn Backend,
        plan: &Plan,
        device: &DeviceSelection,
    ) -> Result<Box<dyn Executable>, Error> {
        Ok(backend.prepare(&self.bound, plan, device)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAT: &str = "param N: i64 = 8;\nparam alpha: f32 = 0.1;\ngrid [N, N];\nsteps 3;\nfield u: f32 border clamp = f32(x + y);\nfield img: u8x3;\nstage diffuse { u = u + alpha * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u); }\n";

    fn sets(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn binds_set_values_and_finds_fields_and_groups() {
        let session = Session::from_text(HEAT, "heat.tess", "heat", &sets(&[("N", "5")])).unwrap();
        assert_eq!(session.bound().extents, vec![5, 5]);
        assert_eq!(
            (session.name(), session.default_steps(), session.grid_text()),
            ("heat", 3, "5x5".to_string())
        );
        assert_eq!(session.field("u").unwrap().components, vec![0]);
        assert_eq!(session.field("img").unwrap().components.len(), 3);
        assert_eq!(session.field("img.y").unwrap().types, vec![ScalarType::U8]);
        let fields = session.initial_fields(&[]).unwrap();
        assert_eq!(fields.buffer(0).get_f64(7), 3.0);
    }

    #[test]
    fn unknown_fields_and_parameters_suggest_the_closest_name() {
        let session = Session::from_text(HEAT, "heat.tess", "heat", &[]).unwrap();
        assert_eq!(
            session.field("uu").unwrap_err().to_string(),
            "program `heat` has no field `uu`; did you mean `u`?"
        );
        let err =
            Session::from_text(HEAT, "heat.tess", "heat", &sets(&[("alpa", "1")])).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("the program has no parameter `alpa`")
                && text.contains("did you mean `alpha`?"),
            "{text}"
        );
        assert_eq!(err.exit_code(), 1);
    }

    #[test]
    fn set_arguments_need_an_equals_sign() {
        assert_eq!(parse_set(" N = 64").unwrap(), ("N".into(), "64".into()));
        assert_eq!(
            parse_set("N").unwrap_err().to_string(),
            "`N` is not of the form NAME=VALUE (e.g. `--set N=1024`)"
        );
    }
}
