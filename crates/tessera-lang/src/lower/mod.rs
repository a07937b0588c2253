//! Lowering the syntax tree to the IR, resolving names.
//!
//! Declarations are entered first, in source order (so uses can be checked against the
//! declaration order); expressions are then lowered in the printer's canonical order — field
//! initial values, stages (body, then in-stage reductions), after-step reductions, `until` —
//! so that parsing printed text reproduces the same arenas. Reductions are numbered the same
//! way: in-stage ones by stage, then after-step ones.

mod array;
mod expr;
mod inline;
mod receiver;
mod scan;
mod scope;
mod stage;
mod table;
mod types;
mod unroll;

use std::collections::HashSet;

use tessera_ir::{Diagnostic, Program, Reduction, Span};

use crate::ast::{Expr, Item, ReduceDecl, StageDecl, Statement};
use inline::{ConstDef, FnDef};
use scope::{Global, Symbols};
use types::Aliases;

/// The lowered program and the names of the type aliases that `sets` replaced.
pub fn lower(
    items: &[Item],
    default_name: &str,
    sets: &[(String, String)],
) -> Result<(Program, Vec<String>), Vec<Diagnostic>> {
    let mut lowerer = Lowerer {
        program: Program::new(default_name, Vec::new()),
        errors: Vec::new(),
        symbols: Symbols::default(),
        aliases: Aliases::default(),
        sets,
        overrides_used: Vec::new(),
        dims: None,
        reads_reduction: false,
        inits: Vec::new(),
        reductions: Vec::new(),
        consts: Vec::new(),
        functions: Vec::new(),
        depth: 0,
        limit_reported: false,
        unrolled: 0,
        unroll_reported: false,
        reported: HashSet::new(),
    };
    let grid = lowerer.singletons(items);
    lowerer.declare_items(items);
    if let Some((index, extents, span)) = grid {
        lowerer.lower_grid(index, extents, span);
    }
    lowerer.check_definitions();
    lowerer.lower_inits();
    let mut after_step = Vec::new();
    for (index, item) in items.iter().enumerate() {
        match item {
            Item::Stage(stage) => lowerer.lower_stage(index, stage),
            Item::Reduce(decl) => after_step.push((index, decl)),
            _ => {}
        }
    }
    for (index, decl) in after_step {
        lowerer.lower_after_step(index, decl);
    }
    if let Some((index, condition, span)) =
        items.iter().enumerate().find_map(|(i, item)| match item {
            Item::Until(condition, span) => Some((i, condition, *span)),
            _ => None,
        })
    {
        lowerer.lower_until(index, condition, span);
    }
    for (index, item) in items.iter().enumerate() {
        if let Item::Receiver(decl) = item {
            lowerer.lower_receiver(index, decl);
        }
    }
    lowerer.finish()
}

/// State of one lowering.
pub(crate) struct Lowerer<'a> {
    program: Program,
    errors: Vec<Diagnostic>,
    symbols: Symbols,
    aliases: Aliases,
    sets: &'a [(String, String)],
    overrides_used: Vec<String>,
    /// Number of grid axes, once the grid is known.
    dims: Option<usize>,
    /// Set when a name resolves to a reduction (for `until`).
    reads_reduction: bool,
    /// Initial values still to lower: field, expression, declaring item.
    inits: Vec<(tessera_ir::Id<tessera_ir::Field>, &'a Expr, usize)>,
    /// Reductions in canonical order (in-stage by stage, then after-step), once lowered.
    reductions: Vec<Option<Reduction>>,
    /// `const` declarations, in source order.
    consts: Vec<ConstDef<'a>>,
    /// `fn` declarations, in source order.
    functions: Vec<FnDef<'a>>,
    /// Value expressions being lowered inside each other (inlined calls included).
    depth: usize,
    /// Set once a limit of inlining (depth, size) has been reported.
    limit_reported: bool,
    /// Loop iterations unrolled so far (`for` and `sum`), against [`array::MAX_UNROLLED`].
    unrolled: i64,
    /// Set once too many unrolled iterations have been reported.
    unroll_reported: bool,
    /// Code, message and primary span of each error reported, so that an error in a body
    /// inlined several times is reported once.
    reported: HashSet<(&'static str, String, Option<Span>)>,
}

impl<'a> Lowerer<'a> {
    fn error(&mut self, diagnostic: Diagnostic) {
        let key = (
            diagnostic.code,
            diagnostic.message.clone(),
            diagnostic.primary_span(),
        );
        if self.reported.insert(key) {
            self.errors.push(diagnostic);
        }
    }

    /// `program`, `grid`, `steps` and `until` (each at most once); returns the grid.
    fn singletons(&mut self, items: &'a [Item]) -> Option<(usize, &'a [Expr], Span)> {
        let mut seen: [Option<Span>; 4] = [None; 4];
        let mut grid = None;
        for (index, item) in items.iter().enumerate() {
            let (slot, what, span) = match item {
                Item::Program(name, span) => {
                    self.program.name = name.name.clone();
                    (0, "program", *span)
                }
                Item::Grid { extents, span } => {
                    grid.get_or_insert((index, extents.as_slice(), *span));
                    (1, "grid", *span)
                }
                Item::Steps(steps, span) => {
                    self.program.default_steps.get_or_insert(*steps);
                    (2, "steps", *span)
                }
                Item::Until(_, span) => (3, "until", *span),
                _ => continue,
            };
            match seen[slot] {
                None => seen[slot] = Some(span),
                Some(first) => self.error(
                    Diagnostic::error("E0033", format!("`{what}` is declared twice"))
                        .with_primary(span, "declared again here")
                        .with_secondary(first, "first declared here")
                        .with_help(format!(
                            "a program has one `{what}` declaration; remove one of them"
                        )),
                ),
            }
        }
        if grid.is_none() {
            let span = items.iter().find_map(|item| match item {
                Item::Field { name, .. } => Some(name.span),
                Item::Stage(stage) => Some(stage.span),
                _ => None,
            });
            let mut d = Diagnostic::error("E0032", "the program declares no grid");
            d = match span {
                Some(span) => d.with_primary(span, "this needs a grid"),
                None => d.with_primary(Span::new(0, 0), "no `grid` declaration in this file"),
            };
            self.error(
                d.with_help("declare the grid's extents, slowest axis first, e.g. `grid [N, N];`"),
            );
        }
        grid
    }

    /// Enters every declaration in source order, allocating parameters, fields and stages.
    fn declare_items(&mut self, items: &'a [Item]) {
        let in_stage_count = items
            .iter()
            .map(|item| match item {
                Item::Stage(stage) => stage
                    .body
                    .iter()
                    .filter(|s| matches!(s, Statement::Reduce(_)))
                    .count(),
                _ => 0,
            })
            .sum::<usize>();
        let mut in_stage = 0;
        let mut after_step = in_stage_count;
        for (index, item) in items.iter().enumerate() {
            match item {
                Item::Param {
                    name,
                    ty,
                    default,
                    non_finite,
                    span,
                } => self.declare_param(index, name, ty, (default.0, *non_finite), *span),
                Item::Alias { name, ty } => self.declare_alias(index, name, ty),
                Item::Field {
                    name,
                    ty,
                    attrs,
                    span,
                } => self.declare_field(index, name, ty, attrs, *span),
                Item::Table { name, ty, span } => self.declare_table(index, name, ty, *span),
                Item::Const(decl) => self.declare_const(index, decl),
                Item::Function(decl) => self.declare_function(index, decl),
                Item::Stage(stage) => self.declare_stage(index, stage, &mut in_stage),
                Item::Reduce(decl) => {
                    self.declare_reduction(index, decl, after_step);
                    after_step += 1;
                }
                Item::Receiver(decl) => self.declare(&decl.name, Global::Receiver, index),
                Item::Program(..) | Item::Grid { .. } | Item::Steps(..) | Item::Until(..) => {}
            }
        }
        self.reductions = vec![None; after_step];
    }

    fn declare_stage(&mut self, index: usize, stage: &StageDecl, in_stage: &mut usize) {
        self.program.stages.alloc(tessera_ir::Stage {
            name: stage.name.name.clone(),
            region: None,
            borders: Vec::new(),
            locals: Default::default(),
            body: Vec::new(),
            span: stage.span,
        });
        self.declare(&stage.name, Global::Stage, index);
        for statement in &stage.body {
            if let Statement::Reduce(decl) = statement {
                self.declare_reduction(index, decl, *in_stage);
                *in_stage += 1;
            }
        }
    }

    fn declare_reduction(&mut self, index: usize, decl: &ReduceDecl, id: usize) {
        self.declare(
            &decl.name,
            Global::Reduction(tessera_ir::Id::from_index(id)),
            index,
        );
    }

    fn finish(mut self) -> Result<(Program, Vec<String>), Vec<Diagnostic>> {
        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        // Every slot is filled unless an error was reported above.
        for reduction in std::mem::take(&mut self.reductions).into_iter().flatten() {
            self.program.reductions.alloc(reduction);
        }
        Ok((self.program, self.overrides_used))
    }
}
