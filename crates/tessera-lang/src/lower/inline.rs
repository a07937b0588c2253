//! `const` values and `fn` functions, inlined where they are used: a constant's value is
//! lowered again at each use, a call's body with each parameter standing for its argument. The
//! IR has no node for either.

use tessera_ir::{
    Arena, Constant, Diagnostic, Expr as IrExpr, ExprId, ExprKind as Ir, ScalarType, Span,
};

use super::Lowerer;
use super::array::{leaves, literal_shape, shape_text};
use super::scope::{Decl, Global, Resolved, Use};
use crate::ast::{ConstDecl, Expr, ExprKind, FnDecl, Ident, Path};
use crate::parser::MAX_NESTING;

/// Most expression nodes a program may have once its calls are inlined.
const MAX_INLINED_EXPRS: usize = 1 << 20;

/// A declared `const`: its declaration, its (element) type once resolved, the declaring item
/// and its shape (empty for a scalar; `None` when its value does not match its type).
#[derive(Clone)]
pub struct ConstDef<'a> {
    pub(super) decl: &'a ConstDecl,
    pub(super) ty: Option<ScalarType>,
    pub(super) item: usize,
    pub(super) shape: Option<Vec<usize>>,
}

/// A declared `fn`: its declaration and the declaring item.
#[derive(Clone, Copy)]
pub struct FnDef<'a> {
    decl: &'a FnDecl,
    item: usize,
}

impl<'a> FnDef<'a> {
    /// The function's name.
    pub fn name(&self) -> &'a str {
        &self.decl.name.name
    }
}

/// The body of a function being inlined: what its parameters stand for.
pub struct Frame<'s> {
    /// The function.
    function: &'s FnDecl,
    /// The call's arguments; `None` while the definition alone is checked.
    arguments: Option<&'s [Expr]>,
    /// Where the call is, for lowering its arguments.
    caller: Use<'s>,
    /// The call (the function's name while its definition alone is checked).
    call: Span,
}

/// The parameter of the function being inlined at `at` that `path` names, if any.
pub(super) fn parameter<'s>(path: &Path, at: Use<'s>) -> Option<(&'s Frame<'s>, usize)> {
    let frame = at.frame?;
    let index = (frame.function.params.iter()).position(|p| p.name == path.head.name)?;
    Some((frame, index))
}

impl<'a> Lowerer<'a> {
    /// Declares `const NAME[: TYPE] = EXPR;`, checking an array value's shape against its type.
    pub(super) fn declare_const(&mut self, item: usize, decl: &'a ConstDecl) {
        let declared = decl.ty.as_ref().map(|ty| self.const_type(ty, item));
        let ty = declared.as_ref().and_then(|(ty, _)| *ty);
        let shape = match literal_shape(&decl.value) {
            Err((span, message)) => {
                self.shape_mismatch(&decl.name.name, span, message);
                None
            }
            Ok(shape) => match declared {
                Some((_, Some(declared))) if declared != shape => {
                    let message = format!(
                        "the value has shape {}, its type says {}",
                        shape_text(&shape),
                        shape_text(&declared)
                    );
                    self.shape_mismatch(&decl.name.name, decl.value.span, message);
                    None
                }
                Some((_, None)) => None,
                _ => Some(shape),
            },
        };
        self.declare(&decl.name, Global::Const(self.consts.len()), item);
        self.consts.push(ConstDef {
            decl,
            ty,
            item,
            shape,
        });
    }

    /// Reports an array constant whose value is out of shape.
    fn shape_mismatch(&mut self, name: &str, span: Span, label: String) {
        self.error(
            Diagnostic::error("E0048", format!("the value of the constant `{name}` does not match its shape"))
                .with_primary(span, label)
                .with_help("an array constant's value is a literal with one element per index, nested as its type: `const c: [[i64; 2]; 3] = [[0, 0], [1, 0], [0, 1]];`"),
        );
    }

    /// Declares `fn NAME(PARAM, ...) = EXPR;` and checks its parameters' names.
    pub(super) fn declare_function(&mut self, item: usize, decl: &'a FnDecl) {
        self.declare(&decl.name, Global::Function(self.functions.len()), item);
        self.functions.push(FnDef { decl, item });
        for (index, param) in decl.params.iter().enumerate() {
            if !self.allowed_name(param) {
                continue;
            }
            if let Some(first) = decl.params[..index].iter().find(|p| p.name == param.name) {
                let help = "give each parameter of a function its own name";
                self.duplicate(param, first.span, "parameter", help);
            }
        }
    }

    /// Checks every constant and function once, used or not, lowering it into a scratch arena.
    pub(super) fn check_definitions(&mut self) {
        for index in 0..self.consts.len() {
            self.check_const(index);
        }
        for index in 0..self.functions.len() {
            self.check_function(index);
        }
    }

    /// A constant's value may use literals, parameters, constants and functions of them.
    fn check_const(&mut self, index: usize) {
        let def = self.consts[index].clone();
        if def.shape.is_none() {
            return;
        }
        let (_, scratch) = self.in_scratch(|this| {
            for element in leaves(&def.decl.value) {
                this.lower_const_element(index, element);
            }
        });
        let point_dependent = scratch.values().find(|e| {
            matches!(
                e.kind,
                Ir::Read { .. } | Ir::Coord(_) | Ir::Step | Ir::ReductionValue(_)
            )
        });
        if let Some(expr) = point_dependent {
            let name = &self.consts[index].decl.name.name;
            self.error(
                Diagnostic::error("E0041", format!("the constant `{name}` depends on the point"))
                    .with_primary(expr.span, "a field, coordinate, step or reduction")
                    .with_help("a constant's value uses literals, parameters and other constants; for a value per point, use a `let` or a function"),
            );
        }
    }

    /// A function's name must not hide a built-in call; its body is lowered with its
    /// parameters unbound.
    fn check_function(&mut self, index: usize) {
        let FnDef { decl, item } = self.functions[index];
        let name = decl.name.name.as_str();
        if self.is_builtin_call(name) {
            self.error(
                Diagnostic::error("E0040", format!("the function `{name}` hides a built-in function or conversion"))
                    .with_primary(decl.name.span, "a built-in name")
                    .with_help("give the function another name: math functions, `select`, conversions and type aliases keep theirs"),
            );
        }
        self.in_scratch(|this| {
            let frame = Frame {
                function: decl,
                arguments: None,
                caller: Use::top(item),
                call: decl.name.span,
            };
            this.value(&decl.body, Use::in_function(item, &frame))
        });
    }

    /// Runs `lower` with an empty expression arena, which it returns; the program's is kept,
    /// and the loop iterations it unrolls do not count against the program's limit.
    fn in_scratch<R>(&mut self, lower: impl FnOnce(&mut Self) -> R) -> (R, Arena<IrExpr>) {
        let kept = std::mem::take(&mut self.program.exprs);
        let unrolled = self.unrolled;
        let result = lower(self);
        self.unrolled = unrolled;
        (result, std::mem::replace(&mut self.program.exprs, kept))
    }

    /// A use of the constant `index` (its element `path.indices` for an array): the value
    /// lowered where it is declared, converted to its type when one is written.
    pub(super) fn inline_const(&mut self, index: usize, path: &Path, at: Use) -> Option<ExprId> {
        let (element, _) = self.const_element(index, &path.indices, path.span, at)?;
        self.lower_const_element(index, element)
    }

    /// One scalar element of the constant `index`, converted to its type when one is written.
    fn lower_const_element(&mut self, index: usize, element: &Expr) -> Option<ExprId> {
        let (ty, item) = (self.consts[index].ty, self.consts[index].item);
        let value = self.value(element, Use::top(item))?;
        Some(match ty {
            Some(ty) => self.alloc(Ir::Cast(ty, value), element.span),
            None => value,
        })
    }

    /// The function a call names, if it is a declared function.
    pub(super) fn declared_function(&self, name: &str) -> Option<(usize, Decl)> {
        let decl = *self.symbols.globals.get(name)?;
        match decl.global {
            Global::Function(index) => Some((index, decl)),
            _ => None,
        }
    }

    /// A call of the function `index`: its body, each parameter standing for its argument.
    pub(super) fn inline_call(
        &mut self,
        (index, declared): (usize, Decl),
        function: &Ident,
        arguments: &[Expr],
        span: Span,
        at: Use,
    ) -> Option<ExprId> {
        if declared.item > at.item {
            self.used_before_declaration(function, declared);
            return None;
        }
        if declared.item == at.item {
            self.recursion(function);
            return None;
        }
        let FnDef { decl, item } = self.functions[index];
        if arguments.len() != decl.params.len() {
            let params: Vec<&str> = decl.params.iter().map(|p| p.name.as_str()).collect();
            let usage = format!("{}({})", function.name, params.join(", "));
            self.argument_count(&function.name, params.len(), arguments.len(), span, &usage);
            return None;
        }
        if self.program.exprs.len() >= MAX_INLINED_EXPRS {
            self.too_large(span);
            return None;
        }
        let frame = Frame {
            function: decl,
            arguments: Some(arguments),
            caller: at,
            call: span,
        };
        self.value(&decl.body, Use::in_function(item, &frame))
    }

    /// A parameter named alone: its argument, lowered where the call is.
    pub(super) fn argument(
        &mut self,
        path: &Path,
        (frame, index): (&Frame, usize),
    ) -> Option<ExprId> {
        if !self.whole_parameter(path) {
            return None;
        }
        match frame.arguments {
            Some(arguments) => self.value(&arguments[index], frame.caller),
            None => Some(self.placeholder(path.span)),
        }
    }

    /// A parameter read at `offset`: its argument, a field, read at the sum of the offsets.
    pub(super) fn argument_read(
        &mut self,
        path: &Path,
        (frame, index): (&Frame, usize),
        offset: Vec<i32>,
        span: Span,
    ) -> Option<ExprId> {
        if !self.whole_parameter(path) {
            return None;
        }
        self.shifted_argument(frame, index, offset, span)
    }

    /// Parameter `index` of `frame` read at `offset`; a parameter passed on is followed.
    fn shifted_argument(
        &mut self,
        frame: &Frame,
        index: usize,
        offset: Vec<i32>,
        span: Span,
    ) -> Option<ExprId> {
        let Some(arguments) = frame.arguments else {
            return Some(self.placeholder(span));
        };
        let argument = &arguments[index];
        let here = || Some(vec![0; offset.len()]);
        let (path, own) = match &argument.kind {
            ExprKind::Name(path) => (path.clone(), here()),
            ExprKind::Read {
                path,
                offsets,
                brackets,
            } => match self.subscript(path, (offsets, *brackets), frame.caller) {
                (element, None) => (element, here()),
                (path, Some(offsets)) => {
                    let own = self.offsets(&path, offsets, *brackets, frame.caller);
                    (path, own)
                }
            },
            _ => {
                self.not_a_field_argument(frame, index, argument.span);
                return None;
            }
        };
        let total = self.add_offsets(&offset, &own?, argument.span)?;
        if let Some((outer, outer_index)) = parameter(&path, frame.caller) {
            if !self.whole_parameter(&path) {
                return None;
            }
            return self.shifted_argument(outer, outer_index, total, span);
        }
        let Resolved::Global(Global::Field(field)) = self.resolve(&path, frame.caller)? else {
            self.not_a_field_argument(frame, index, argument.span);
            return None;
        };
        Some(self.alloc(
            Ir::Read {
                field,
                offset: total,
            },
            span,
        ))
    }

    /// Reports a component of a parameter (`f.x`); returns whether the path is the parameter alone.
    fn whole_parameter(&mut self, path: &Path) -> bool {
        let Some(member) = &path.member else {
            return true;
        };
        self.error(
            Diagnostic::error(
                "E0016",
                format!(
                    "the function parameter `{}` has no components",
                    path.head.name
                ),
            )
            .with_primary(member.span, "a component of a parameter")
            .with_help("pass the component itself as the argument: `f(E.ex)`"),
        );
        false
    }

    /// The sum of a read's offset and its argument's own, per axis.
    fn add_offsets(&mut self, offset: &[i32], own: &[i32], span: Span) -> Option<Vec<i32>> {
        let total: Option<Vec<i32>> = (offset.iter().zip(own))
            .map(|(a, b)| a.checked_add(*b))
            .collect();
        if total.is_none() {
            self.error(
                Diagnostic::error("E0022", "the offsets added by the call overflow")
                    .with_primary(span, "does not fit in 32 bits once shifted")
                    .with_help(
                        "offsets are small distances from the current point, such as `-1` or `2`",
                    ),
            );
        }
        total
    }

    /// Stands for an unbound parameter while a definition alone is checked.
    fn placeholder(&mut self, span: Span) -> ExprId {
        self.alloc(Ir::Literal(Constant::Int(0)), span)
    }

    /// Allocates an expression node.
    fn alloc(&mut self, kind: Ir, span: Span) -> ExprId {
        self.program.exprs.alloc(IrExpr { kind, span })
    }

    /// Reports an argument that is not a field for a parameter read at an offset.
    fn not_a_field_argument(&mut self, frame: &Frame, index: usize, span: Span) {
        let function = &frame.function.name.name;
        let param = &frame.function.params[index];
        self.error(
            Diagnostic::error(
                "E0043",
                format!("`{function}` reads `{}` at an offset, so its argument must be a field", param.name),
            )
            .with_primary(span, "not a field")
            .with_secondary(param.span, "the parameter read at an offset")
            .with_help("pass a field (`u`, `E.ex`) or a field read at an offset (`u[1, 0]`); compute other values inside the function"),
        );
    }

    /// Reports a function calling itself.
    fn recursion(&mut self, function: &Ident) {
        self.error(
            Diagnostic::error("E0042", format!("the function `{}` calls itself", function.name))
                .with_primary(function.span, "a recursive call")
                .with_help("functions are inlined, so they cannot be recursive; write the repeated part out or use another function"),
        );
    }

    /// Reports the first expression found too deep, at the innermost call being inlined.
    pub(super) fn too_deep(&mut self, expr: &Expr, at: Use) {
        let span = at.frame.map_or(expr.span, |frame| frame.call);
        if std::mem::replace(&mut self.limit_reported, true) {
            return;
        }
        self.error(
            Diagnostic::error(
                "E0006",
                format!("expression nested more than {MAX_NESTING} levels deep once its function calls are inlined"),
            )
            .with_primary(span, "too deep here")
            .with_help("split the expression with `let` bindings, or call fewer functions inside each other"),
        );
    }

    /// Reports, once, a program grown too large by inlining.
    fn too_large(&mut self, span: Span) {
        if std::mem::replace(&mut self.limit_reported, true) {
            return;
        }
        self.error(
            Diagnostic::error(
                "E0044",
                format!("the program has more than {MAX_INLINED_EXPRS} expression nodes once its function calls are inlined"),
            )
            .with_primary(span, "inlined here")
            .with_help("a function that calls another several times doubles its size at each level; bind repeated values with `let` in the stage"),
        );
    }
}
