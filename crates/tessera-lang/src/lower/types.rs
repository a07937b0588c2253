//! Types: aliases (with `--set` overrides), parameter and field types, struct and vector
//! fields as groups of component fields.

use std::collections::BTreeMap;

use tessera_ir::diagnostic::did_you_mean;
use tessera_ir::{Constant, Diagnostic, Field, FieldGroup, Id, Param, ScalarType, Span, Table};

use super::Lowerer;
use super::array::{IntUse, MAX_UNROLLED};
use super::scope::{Global, Use, quoted};
use crate::ast::{Attrs, Expr, Ident, TypeExpr};

/// Storable element types, for vector types and suggestions.
const STORABLE: [ScalarType; 5] = [
    ScalarType::U8,
    ScalarType::I32,
    ScalarType::I64,
    ScalarType::F32,
    ScalarType::F64,
];

/// Component names of vector fields, in order.
const VECTOR_COMPONENTS: [&str; 4] = ["x", "y", "z", "w"];

/// A declared alias: its type (after overrides), declaring item and name span.
#[derive(Clone, Copy)]
struct Alias {
    ty: ScalarType,
    item: usize,
    span: Span,
}

/// Type aliases by name.
#[derive(Default)]
pub struct Aliases {
    by_name: BTreeMap<String, Alias>,
}

/// `f32x4` -> (`f32`, 4).
fn vector_type(name: &str) -> Option<(ScalarType, usize)> {
    let (scalar, width) = name.split_once('x')?;
    let width = match width {
        "2" => 2,
        "3" => 3,
        "4" => 4,
        _ => return None,
    };
    let scalar = ScalarType::from_name(scalar).filter(|t| t.is_storable())?;
    Some((scalar, width))
}

impl Aliases {
    /// The type an alias names (after `--set` overrides), for conversions like `real(x)`.
    pub fn get(&self, name: &str) -> Option<ScalarType> {
        self.by_name.get(name).map(|a| a.ty)
    }
}

impl<'a> Lowerer<'a> {
    /// A scalar type name or an alias declared by item `item` or before.
    pub(super) fn scalar_type(&mut self, ty: &Ident, item: usize) -> Option<ScalarType> {
        if let Some(t) = ScalarType::from_name(&ty.name) {
            return Some(t);
        }
        if let Some(alias) = self
            .aliases
            .by_name
            .get(&ty.name)
            .filter(|a| a.item <= item)
        {
            return Some(alias.ty);
        }
        if vector_type(&ty.name).is_some() {
            self.error(
                Diagnostic::error("E0037", format!("the vector type `{}` cannot be used here", ty.name))
                    .with_primary(ty.span, "a vector type")
                    .with_help("parameters, aliases, tables and struct components have scalar types (`f32`, `f64`, `i32`, `i64`, `u8`); vectors are for fields"),
            );
            return None;
        }
        self.unknown_type(ty, item);
        None
    }

    fn unknown_type(&mut self, ty: &Ident, item: usize) {
        let mut candidates: Vec<String> = ScalarType::ALL
            .iter()
            .map(|t| t.name().to_string())
            .collect();
        candidates.extend(
            self.aliases
                .by_name
                .iter()
                .filter(|(_, a)| a.item <= item)
                .map(|(n, _)| n.clone()),
        );
        candidates.extend(
            STORABLE
                .iter()
                .flat_map(|t| (2..=4).map(move |w| format!("{t}x{w}"))),
        );
        let help = match did_you_mean(&ty.name, candidates.iter().map(String::as_str)) {
            Some(s) => format!("did you mean `{s}`?"),
            None => "use `f32`, `f64`, `i32`, `i64`, `u8`, a declared `type` alias, or a vector such as `f32x4`".to_string(),
        };
        self.error(
            Diagnostic::error("E0012", format!("unknown type `{}`", ty.name))
                .with_primary(ty.span, "not a type")
                .with_help(help),
        );
    }

    /// `type NAME = TYPE;`, replaced by a `--set NAME=TYPE` when given.
    pub(super) fn declare_alias(&mut self, item: usize, name: &Ident, ty: &Ident) {
        if !self.allowed_name(name) {
            return;
        }
        if ScalarType::from_name(&name.name).is_some() || vector_type(&name.name).is_some() {
            self.error(
                Diagnostic::error(
                    "E0031",
                    format!(
                        "`{}` is a built-in type and cannot be redeclared",
                        name.name
                    ),
                )
                .with_primary(name.span, "a built-in type")
                .with_help("give the alias another name, e.g. `type real = f32;`"),
            );
            return;
        }
        if let Some(first) = self.aliases.by_name.get(&name.name).map(|a| a.span) {
            self.duplicate(name, first, "type", "rename one of the aliases");
            return;
        }
        let overridden = self
            .sets
            .iter()
            .rev()
            .find(|(n, _)| *n == name.name)
            .map(|(_, v)| v.trim());
        let resolved = match overridden {
            Some(value) => {
                if !self.overrides_used.contains(&name.name) {
                    self.overrides_used.push(name.name.clone());
                }
                match ScalarType::from_name(value) {
                    Some(t) => Some(t),
                    None => {
                        let names: Vec<&str> = STORABLE.iter().map(|t| t.name()).collect();
                        let help = match did_you_mean(value, names.iter().copied()) {
                            Some(s) => format!("did you mean `--set {}={s}`?", name.name),
                            None => format!(
                                "the type alias `{}` takes a scalar type: {}",
                                name.name,
                                quoted(&names)
                            ),
                        };
                        self.error(
                            Diagnostic::error(
                                "E0036",
                                format!(
                                    "`--set {}={value}`: `{value}` is not a scalar type",
                                    name.name
                                ),
                            )
                            .with_primary(
                                ty.span,
                                format!("the alias `{}` is declared here", name.name),
                            )
                            .with_help(help),
                        );
                        // Go on with the declared type so that uses of the alias are not reported too.
                        self.scalar_type(ty, item)
                    }
                }
            }
            None => self.scalar_type(ty, item),
        };
        if let Some(ty) = resolved {
            self.aliases.by_name.insert(
                name.name.clone(),
                Alias {
                    ty,
                    item,
                    span: name.span,
                },
            );
        }
    }

    /// `param NAME: TYPE = LITERAL [nonfinite];`: `value` is the default and whether
    /// `nonfinite` was written.
    pub(super) fn declare_param(
        &mut self,
        item: usize,
        name: &Ident,
        ty: &Ident,
        value: (Constant, bool),
        span: Span,
    ) {
        let Some(ty) = self.scalar_type(ty, item) else {
            return;
        };
        let id = self.program.params.alloc(Param {
            name: name.name.clone(),
            ty,
            default: value.0,
            accepts_non_finite: value.1,
            span,
        });
        self.declare(name, Global::Param(id), item);
    }

    /// `table NAME: TYPE;`: an input table of scalars.
    pub(super) fn declare_table(&mut self, item: usize, name: &Ident, ty: &Ident, span: Span) {
        let Some(ty) = self.scalar_type(ty, item) else {
            return;
        };
        let id = self.program.tables.alloc(Table {
            name: name.name.clone(),
            ty,
            span,
        });
        self.declare(name, Global::Table(id), item);
    }

    /// `field NAME: FTYPE attrs;`: one field, or a group of component fields.
    pub(super) fn declare_field(
        &mut self,
        item: usize,
        name: &Ident,
        ty: &'a TypeExpr,
        attrs: &'a Attrs,
        span: Span,
    ) {
        let members: Vec<(String, ScalarType, Option<&'a Attrs>, Span)> = match ty {
            TypeExpr::Array {
                element, length, ..
            } => {
                let scalar = self.array_element_type(element, item);
                let length = self.array_length(length, item);
                let (Some(scalar), Some(length)) = (scalar, length) else {
                    return;
                };
                (0..length)
                    .map(|i| (i.to_string(), scalar, None, span))
                    .collect()
            }
            TypeExpr::Named(ty_name) => {
                if let Some((scalar, width)) = vector_type(&ty_name.name) {
                    VECTOR_COMPONENTS[..width]
                        .iter()
                        .map(|c| (c.to_string(), scalar, None, span))
                        .collect()
                } else {
                    let Some(scalar) = self.scalar_type(ty_name, item) else {
                        return;
                    };
                    let id = self.field(name.name.clone(), scalar, &[attrs], span, item);
                    self.declare(name, Global::Field(id), item);
                    return;
                }
            }
            TypeExpr::Struct(members, struct_span) => {
                if members.is_empty() {
                    self.error(
                        Diagnostic::error(
                            "E0037",
                            format!("the struct field `{}` has no components", name.name),
                        )
                        .with_primary(*struct_span, "empty")
                        .with_help("list its components, e.g. `{ex: f32, ey: f32}`"),
                    );
                    return;
                }
                let mut out: Vec<(String, ScalarType, Option<&'a Attrs>, Span)> = Vec::new();
                for (i, member) in members.iter().enumerate() {
                    if let Some(first) = members[..i]
                        .iter()
                        .find(|m| m.name.name == member.name.name)
                    {
                        self.duplicate(
                            &member.name,
                            first.name.span,
                            "component",
                            "give each component its own name",
                        );
                        continue;
                    }
                    if let Some(scalar) = self.scalar_type(&member.ty, item) {
                        out.push((
                            member.name.name.clone(),
                            scalar,
                            Some(&member.attrs),
                            member.span,
                        ));
                    }
                }
                if out.len() != members.len() {
                    return;
                }
                out
            }
        };
        let group = self.program.groups.alloc(FieldGroup {
            name: name.name.clone(),
            component_names: members.iter().map(|m| m.0.clone()).collect(),
            components: Vec::new(),
            span,
        });
        for (index, (component, scalar, own, member_span)) in members.into_iter().enumerate() {
            let layers: Vec<&'a Attrs> = own.into_iter().chain([attrs]).collect();
            let id = self.field(
                format!("{}.{component}", name.name),
                scalar,
                &layers,
                member_span,
                item,
            );
            self.program.fields[id].group = Some((group, index));
            self.program.groups[group].components.push(id);
        }
        self.declare(name, Global::Group(group), item);
    }

    /// The element type of an array field: a scalar type or alias.
    fn array_element_type(&mut self, element: &TypeExpr, item: usize) -> Option<ScalarType> {
        match element {
            TypeExpr::Named(name) => self.scalar_type(name, item),
            TypeExpr::Struct(_, span) | TypeExpr::Array { span, .. } => {
                self.not_scalar_element(*span, "an array field");
                None
            }
        }
    }

    fn not_scalar_element(&mut self, span: Span, what: &str) {
        self.error(
            Diagnostic::error("E0037", format!("the elements of {what} are scalars"))
                .with_primary(span, "not a scalar type")
                .with_help("write `[f64; 9]`: arrays of fields have one level of scalar elements; arrays of constants may nest (`[[i64; 2]; 9]`)"),
        );
    }

    /// An array type's length: a compile-time integer from 1 to [`MAX_UNROLLED`].
    fn array_length(&mut self, length: &Expr, item: usize) -> Option<usize> {
        let value = self.compile_time(length, Use::top(item), IntUse::Length)?;
        match usize::try_from(value)
            .ok()
            .filter(|v| (1..=MAX_UNROLLED as usize).contains(v))
        {
            Some(length) => Some(length),
            None => {
                self.error(
                    Diagnostic::error("E0048", format!("the array length {value} is out of range"))
                        .with_primary(length.span, "not from 1 to 4096")
                        .with_help(format!("an array has 1 to {MAX_UNROLLED} elements")),
                );
                None
            }
        }
    }

    /// A constant's type: its scalar (element) type and shape (empty for a scalar), each `None`
    /// where the type is in error.
    pub(super) fn const_type(
        &mut self,
        ty: &TypeExpr,
        item: usize,
    ) -> (Option<ScalarType>, Option<Vec<usize>>) {
        match ty {
            TypeExpr::Named(name) => (self.scalar_type(name, item), Some(Vec::new())),
            TypeExpr::Struct(_, span) => {
                self.not_scalar_element(*span, "a constant");
                (None, None)
            }
            TypeExpr::Array {
                element, length, ..
            } => {
                let (scalar, inner) = self.const_type(element, item);
                let length = self.array_length(length, item);
                let shape = inner
                    .zip(length)
                    .map(|(inner, length)| [vec![length], inner].concat());
                (scalar, shape)
            }
        }
    }

    /// Allocates one field from layers of attributes, the first that sets one wins (a struct
    /// member's own attributes, then those written after the struct).
    fn field(
        &mut self,
        name: String,
        ty: ScalarType,
        layers: &[&'a Attrs],
        span: Span,
        item: usize,
    ) -> Id<Field> {
        let readonly = layers.iter().any(|a| a.readonly.is_some());
        let border = layers
            .iter()
            .find_map(|a| a.border.as_ref())
            .and_then(|b| self.lower_border(b));
        let init = layers.iter().find_map(|a| a.init.as_ref());
        let id = self.program.fields.alloc(Field {
            name,
            ty,
            border,
            init: None,
            group: None,
            readonly,
            span,
        });
        if let Some(init) = init {
            self.inits.push((id, init, item));
        }
        id
    }
}
