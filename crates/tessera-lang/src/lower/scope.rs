//! Name resolution: declarations by name with the item that declares them, and lookup in the
//! documented order — locals, fields, parameters, reductions, then coordinates and `t`.

use std::collections::{BTreeMap, HashMap};

use tessera_ir::diagnostic::did_you_mean;
use tessera_ir::{Diagnostic, Field, FieldGroup, Id, Local, Param, Reduction, Span, Table};

use super::Lowerer;
use super::inline::Frame;
use crate::ast::{Ident, Path};

/// The built-in names: coordinates and the step counter.
pub const BUILTIN_NAMES: [&str; 5] = ["x", "y", "z", "w", "t"];

/// What a top-level name denotes.
#[derive(Clone, Copy, Debug)]
pub enum Global {
    /// A parameter.
    Param(Id<Param>),
    /// A scalar field.
    Field(Id<Field>),
    /// A struct or vector field.
    Group(Id<FieldGroup>),
    /// A stage.
    Stage,
    /// A receiver (a recorded time series, not a value).
    Receiver,
    /// A reduction.
    Reduction(Id<Reduction>),
    /// An input table.
    Table(Id<Table>),
    /// A `const`, by declaration order.
    Const(usize),
    /// A `fn`, by declaration order.
    Function(usize),
}

impl Global {
    fn describe(self) -> &'static str {
        match self {
            Global::Param(_) => "parameter",
            Global::Field(_) | Global::Group(_) => "field",
            Global::Stage => "stage",
            Global::Receiver => "receiver",
            Global::Reduction(_) => "reduction",
            Global::Table(_) => "table",
            Global::Const(_) => "constant",
            Global::Function(_) => "function",
        }
    }
}

/// A top-level declaration: what it is, the index of the item declaring it, where.
#[derive(Clone, Copy, Debug)]
pub struct Decl {
    /// What the name denotes.
    pub global: Global,
    /// Index of the declaring item (names are usable from that item on).
    pub item: usize,
    /// The declared name's span.
    pub span: Span,
}

/// What a name (or `group.component`) refers to at a use.
#[derive(Clone, Copy, Debug)]
pub enum Resolved {
    /// A `let` of the enclosing stage.
    Local(Id<Local>),
    /// A top-level declaration (a component path gives `Global::Field`).
    Global(Global),
    /// A coordinate, by axis (0 = slowest).
    Coord(usize),
    /// The step counter `t`.
    Step,
}

impl Resolved {
    /// "a local", "the parameter", ... for messages.
    pub fn describe(self) -> String {
        match self {
            Resolved::Local(_) => "a local (`let`)".to_string(),
            Resolved::Global(Global::Group(_)) => "a struct or vector field".to_string(),
            Resolved::Global(g) => format!("a {}", g.describe()),
            Resolved::Coord(_) => "a coordinate".to_string(),
            Resolved::Step => "the step counter".to_string(),
        }
    }
}

/// Where a name is used: the item, the stage's locals visible there, the loop variables with
/// their values in this unrolled iteration and, inside a function being inlined, what its
/// parameters stand for.
#[derive(Clone, Copy)]
pub struct Use<'s> {
    /// Index of the item containing the use.
    pub item: usize,
    /// Locals in scope.
    pub locals: Locals<'s>,
    /// The innermost loop variable in scope (`for` or `sum`).
    pub loops: Option<&'s LoopVar<'s>>,
    /// The function whose body this is, with the call's arguments.
    pub frame: Option<&'s Frame<'s>>,
}

/// A loop variable and its value in the iteration being unrolled, with the loops around it.
pub struct LoopVar<'s> {
    /// Its name.
    pub name: &'s str,
    /// Its value in this iteration.
    pub value: i64,
    /// Where it is declared.
    pub span: Span,
    /// The enclosing loop's variable.
    pub outer: Option<&'s LoopVar<'s>>,
}

impl<'s> LoopVar<'s> {
    /// The loop variable `name` among `this` and the loops around it, innermost first.
    pub fn find(this: Option<&'s Self>, name: &str) -> Option<&'s Self> {
        let var = this?;
        if var.name == name {
            return Some(var);
        }
        LoopVar::find(var.outer, name)
    }

    /// The values of `this` and the loops around it, outermost first.
    pub fn values(this: Option<&Self>) -> Vec<i64> {
        let mut values = Vec::new();
        let mut var = this;
        while let Some(v) = var {
            values.push(v.value);
            var = v.outer;
        }
        values.reverse();
        values
    }
}

impl<'s> Use<'s> {
    /// A use outside any stage body.
    pub fn top(item: usize) -> Use<'static> {
        Use {
            item,
            locals: Locals::default(),
            loops: None,
            frame: None,
        }
    }

    /// A use in a stage's body, where `locals` and the loop variables `loops` are visible.
    pub fn in_stage(item: usize, locals: Locals<'s>, loops: Option<&'s LoopVar<'s>>) -> Use<'s> {
        Use {
            item,
            locals,
            loops,
            frame: None,
        }
    }

    /// The same use inside one more loop iteration.
    pub fn in_loop(self, var: &'s LoopVar<'s>) -> Use<'s> {
        Use {
            loops: Some(var),
            ..self
        }
    }

    /// The value of the loop variable `path` names, if it names one.
    pub fn loop_value(&self, path: &Path) -> Option<i64> {
        if path.member.is_some() || !path.indices.is_empty() {
            return None;
        }
        LoopVar::find(self.loops, &path.head.name).map(|var| var.value)
    }

    /// A use in the body of a function declared by item `item`, inlined with `frame`.
    pub fn in_function(item: usize, frame: &'s Frame<'s>) -> Use<'s> {
        Use {
            item,
            locals: Locals::default(),
            loops: None,
            frame: Some(frame),
        }
    }
}

/// The locals of a stage visible at a use: the first `count` bound (their ids count up in
/// binding order), found by name in constant time.
#[derive(Clone, Copy, Default)]
pub struct Locals<'s> {
    by_name: Option<&'s HashMap<String, Id<Local>>>,
    count: usize,
}

impl<'s> Locals<'s> {
    /// The first `count` locals of `by_name`.
    pub fn new(by_name: &'s HashMap<String, Id<Local>>, count: usize) -> Locals<'s> {
        Locals {
            by_name: Some(by_name),
            count,
        }
    }

    /// The visible local called `name`.
    pub fn get(&self, name: &str) -> Option<Id<Local>> {
        let local = *self.by_name?.get(name)?;
        (local.index() < self.count).then_some(local)
    }

    /// The names of the visible locals, in binding order.
    pub fn names(&self) -> Vec<&'s str> {
        let mut visible: Vec<(&'s str, Id<Local>)> = (self.by_name.into_iter().flatten())
            .filter(|(_, local)| local.index() < self.count)
            .map(|(name, local)| (name.as_str(), *local))
            .collect();
        visible.sort_by_key(|(_, local)| *local);
        visible.into_iter().map(|(name, _)| name).collect()
    }
}

/// Top-level names.
#[derive(Default)]
pub struct Symbols {
    /// Parameters, fields, stages, reductions, constants and functions share one namespace.
    pub globals: BTreeMap<String, Decl>,
}

impl Lowerer<'_> {
    /// Declares a top-level name; reports duplicates and built-in names.
    pub(super) fn declare(&mut self, name: &Ident, global: Global, item: usize) {
        if !self.allowed_name(name) {
            return;
        }
        if let Some(first) = self.symbols.globals.get(&name.name) {
            let (first_span, first_kind) = (first.span, first.global.describe());
            let help = format!(
                "rename one of them: parameters, fields, stages, reductions, constants and functions share one namespace, and `{}` is taken",
                name.name
            );
            self.duplicate(name, first_span, first_kind, &help);
            return;
        }
        self.symbols.globals.insert(
            name.name.clone(),
            Decl {
                global,
                item,
                span: name.span,
            },
        );
    }

    /// Reports a second declaration of a name.
    pub(super) fn duplicate(&mut self, name: &Ident, first: Span, first_kind: &str, help: &str) {
        self.error(
            Diagnostic::error("E0030", format!("`{}` is declared twice", name.name))
                .with_primary(name.span, "declared again here")
                .with_secondary(
                    first,
                    format!("{first_kind} `{}` first declared here", name.name),
                )
                .with_help(help),
        );
    }

    /// Rejects declaring `x y z w t`; returns whether the name may be declared.
    pub(super) fn allowed_name(&mut self, name: &Ident) -> bool {
        if !BUILTIN_NAMES.contains(&name.name.as_str()) {
            return true;
        }
        let meaning = if name.name == "t" {
            "the step counter"
        } else {
            "a coordinate"
        };
        self.error(
            Diagnostic::error(
                "E0031",
                format!("`{}` is a built-in name and cannot be declared", name.name),
            )
            .with_primary(name.span, format!("`{}` is {meaning}", name.name))
            .with_help("choose another name: `x`, `y`, `z`, `w` and `t` are reserved"),
        );
        false
    }

    /// Resolves a name, component path or array element; reports undefined names, uses
    /// before the declaration, unknown components and bad indices. An array constant resolves
    /// to itself: its indices are applied where it is inlined.
    pub(super) fn resolve(&mut self, path: &Path, at: Use) -> Option<Resolved> {
        let head = self.resolve_name(&path.head, at)?;
        let resolved = match &path.member {
            Some(member) => self.component(path, head, member)?,
            None => head,
        };
        if path.indices.is_empty() {
            return Some(resolved);
        }
        match resolved {
            Resolved::Global(Global::Const(_)) => Some(resolved),
            Resolved::Global(Global::Group(group)) if self.program.groups[group].is_array() => {
                let (name, length) = {
                    let group = &self.program.groups[group];
                    (group.name.clone(), group.components.len())
                };
                if path.indices.len() != 1 {
                    self.index_count(&name, "field", 1, path.indices.len(), path.span);
                    return None;
                }
                let index = self.array_index(&path.indices[0], length, &name, at)?;
                let component = self.program.groups[group].components[index];
                Some(Resolved::Global(Global::Field(component)))
            }
            other => {
                let kind = other.describe();
                self.index_count(
                    &path.head.name,
                    kind.trim_start_matches("a "),
                    0,
                    1,
                    path.span,
                );
                None
            }
        }
    }

    /// The component `member` of the group `head` names.
    fn component(&mut self, path: &Path, head: Resolved, member: &Ident) -> Option<Resolved> {
        let Resolved::Global(Global::Group(group)) = head else {
            self.error(
                Diagnostic::error("E0016", format!("`{}` has no components", path.head.name))
                    .with_primary(member.span, format!("`{}` is {}", path.head.name, head.describe()))
                    .with_help("only struct and vector fields have components; remove `.` and what follows"),
            );
            return None;
        };
        let group = &self.program.groups[group];
        match group.component_names.iter().position(|c| *c == member.name) {
            Some(i) => Some(Resolved::Global(Global::Field(group.components[i]))),
            None => {
                let names: Vec<&str> = group.component_names.iter().map(String::as_str).collect();
                let help = match did_you_mean(&member.name, names.iter().copied()) {
                    Some(s) => format!("did you mean `{}.{s}`?", path.head.name),
                    None => format!(
                        "the components of `{}` are {}",
                        path.head.name,
                        quoted(&names)
                    ),
                };
                self.error(
                    Diagnostic::error(
                        "E0016",
                        format!("`{}` has no component `{}`", path.head.name, member.name),
                    )
                    .with_primary(member.span, "unknown component")
                    .with_help(help),
                );
                None
            }
        }
    }

    fn resolve_name(&mut self, name: &Ident, at: Use) -> Option<Resolved> {
        if let Some(local) = at.locals.get(&name.name) {
            return Some(Resolved::Local(local));
        }
        if let Some(decl) = self.symbols.globals.get(&name.name).copied() {
            // Reductions are visible everywhere: only `until` may read them, which the checker enforces.
            let reduction = matches!(decl.global, Global::Reduction(_));
            if decl.item > at.item && !reduction {
                self.used_before_declaration(name, decl);
                return None;
            }
            self.reads_reduction |= reduction;
            return Some(Resolved::Global(decl.global));
        }
        let axes = self.axis_names();
        if let Some(axis) = axes.iter().position(|a| *a == name.name) {
            return Some(Resolved::Coord(axis));
        }
        if name.name == "t" {
            return Some(Resolved::Step);
        }
        let mut candidates: Vec<&str> = at.locals.names();
        candidates.extend(
            self.symbols
                .globals
                .iter()
                .filter(|(_, d)| {
                    (d.item <= at.item || matches!(d.global, Global::Reduction(_)))
                        && !matches!(d.global, Global::Stage | Global::Receiver)
                })
                .map(|(n, _)| n.as_str()),
        );
        candidates.extend(axes.iter().copied());
        candidates.push("t");
        let mut d = Diagnostic::error(
            "E0010",
            format!("cannot find `{}` in this scope", name.name),
        )
        .with_primary(
            name.span,
            "not a local, field, parameter, reduction or coordinate",
        );
        let coordinate = ["x", "y", "z", "w"].contains(&name.name.as_str());
        d = match did_you_mean(&name.name, candidates) {
            _ if coordinate => d.with_help(format!(
                "the grid has {} axes, so the coordinates are {}",
                axes.len(),
                quoted(&axes)
            )),
            Some(s) => d.with_help(format!("did you mean `{s}`?")),
            None => d.with_help(format!(
                "declare it first, e.g. `field {}: f32;` or `param {}: f32 = 0.0;`",
                name.name, name.name
            )),
        };
        self.error(d);
        None
    }

    /// Reports a use of `name` above its declaration.
    pub(super) fn used_before_declaration(&mut self, name: &Ident, decl: Decl) {
        self.error(
            Diagnostic::error(
                "E0015",
                format!("`{}` is used before its declaration", name.name),
            )
            .with_primary(name.span, "used here")
            .with_secondary(
                decl.span,
                format!("the {} is declared here, later", decl.global.describe()),
            )
            .with_help(format!(
                "move the declaration of `{}` above its first use",
                name.name
            )),
        );
    }

    /// Coordinate names of the grid (none without a grid).
    pub(super) fn axis_names(&self) -> Vec<&'static str> {
        tessera_ir::axis_names(self.dims.unwrap_or(0))
    }
}

/// `a`, `b` and `c` as a list of quoted names.
pub fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
