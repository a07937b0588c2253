//! Receivers' gather kernels: one thread per point copies the field's value at the point's
//! linear index into the values buffer, which the host reads back (the field stays on the
//! device).

use tessera_ir::{Id, Receiver, ScalarType};

use super::common::{Ctx, ident};
use crate::kernel::{Expr, Kernel, KernelOp, KernelParam, ParamKind, Stmt};

/// Threads per block of a gather kernel.
const THREADS: u32 = 64;

/// The gather kernel of `receiver`: parameters `field`, `points`, `values`, `n`.
pub(super) fn kernel(ctx: &Ctx, receiver: Id<Receiver>) -> Kernel {
    let program = ctx.bound.program();
    let r = &program.receivers[receiver];
    let ty = program.fields[r.field].ty;
    let buffer = |name: &str, ty, read_only| KernelParam {
        name: name.into(),
        kind: ParamKind::Buffer { ty, read_only },
    };
    let point = Expr::Load {
        buffer: "points".into(),
        index: Box::new(Expr::var("k")),
        cached: true,
    };
    let copy = Stmt::Store {
        buffer: "values".into(),
        index: Expr::var("k"),
        value: Expr::Load {
            buffer: "field".into(),
            index: Box::new(point),
            cached: false,
        },
    };
    let k = Expr::Cast(ScalarType::I64, Box::new(Expr::var("k")));
    Kernel {
        name: format!(
            "ts_{}_receiver{}_{}",
            ident(&program.name),
            receiver.index(),
            ident(&r.name)
        ),
        strategy: "gather",
        doc: format!(
            "receiver `{}`: `{}` at each of its points",
            r.name,
            program.field_text(r.field)
        ),
        params: vec![
            buffer("field", ty, true),
            buffer("points", ctx.ity, true),
            buffer("values", ty, false),
            KernelParam {
                name: "n".into(),
                kind: ParamKind::Scalar(ScalarType::I64),
            },
        ],
        shared: Vec::new(),
        block: [THREADS, 1, 1],
        min_resident_blocks: None,
        body: vec![
            Stmt::Declare {
                var: "k".into(),
                ty: ctx.ity,
                value: Some(
                    Expr::BlockIdx(0)
                        .times(ctx.lit(i64::from(THREADS)))
                        .plus(Expr::ThreadIdx(0)),
                ),
            },
            Stmt::when(k.op(KernelOp::Lt, Expr::var("n")), vec![copy]),
        ],
    }
}
