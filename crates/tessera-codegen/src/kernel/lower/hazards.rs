//! Shared-memory hazards between two stretches of a kernel body: whether threads running
//! both without a barrier between them could see each other's stores (a read after another
//! thread's store, or a store over what another thread still reads), so that a barrier
//! separating stretches that share nothing can be left out.

use tessera_ir::Constant;

use super::super::{Expr, ProgramEnv, Stmt};

/// A shared-memory access: the array, its first index where that is a literal (a ring's slot
/// in an unrolled sweep: the access touches that slot only), and whether it stores.
#[derive(Debug)]
pub struct Access {
    array: String,
    slot: Option<i64>,
    store: bool,
}

/// Whether some access of `first` and some of `second` may touch the same element, one of
/// them a store.
pub fn conflict(first: &[Access], second: &[Access]) -> bool {
    first.iter().any(|a| {
        second.iter().any(|b| {
            let same_slot = a.slot.is_none() || b.slot.is_none() || a.slot == b.slot;
            a.array == b.array && same_slot && (a.store || b.store)
        })
    })
}

/// Every shared-memory access of `body`, nested statements included.
pub fn accesses(body: &[Stmt]) -> Vec<Access> {
    let mut found = Vec::new();
    for stmt in body {
        stmt_accesses(stmt, &mut found);
    }
    found
}

fn stmt_accesses(stmt: &Stmt, found: &mut Vec<Access>) {
    match stmt {
        Stmt::Declare { value, .. } => value.iter().for_each(|v| expr_accesses(v, found)),
        Stmt::Assign { value, .. } => expr_accesses(value, found),
        Stmt::Store { index, value, .. } => {
            expr_accesses(index, found);
            expr_accesses(value, found);
        }
        Stmt::SharedStore {
            array,
            index,
            value,
        } => {
            index.iter().for_each(|i| expr_accesses(i, found));
            expr_accesses(value, found);
            found.push(Access {
                array: array.clone(),
                slot: literal_slot(index),
                store: true,
            });
        }
        Stmt::If {
            cond,
            then,
            otherwise,
        }
        | Stmt::UniformIf {
            cond,
            then,
            otherwise,
        } => {
            expr_accesses(cond, found);
            found.extend(accesses(then));
            found.extend(accesses(otherwise));
        }
        Stmt::UniformCases(cases) => {
            for (cond, body) in cases {
                expr_accesses(cond, found);
                found.extend(accesses(body));
            }
        }
        Stmt::For {
            start,
            end,
            step,
            body,
            ..
        } => {
            [start, end, step]
                .into_iter()
                .for_each(|e| expr_accesses(e, found));
            found.extend(accesses(body));
        }
        Stmt::Stage(eval) => env_accesses(&eval.env, found),
        Stmt::Reduce(eval) => env_accesses(&eval.env, found),
        Stmt::PartialSum(partial) => env_accesses(&partial.env, found),
        Stmt::Block(body) => found.extend(accesses(body)),
        Stmt::Barrier | Stmt::Comment(_) => {}
    }
}

fn env_accesses(env: &ProgramEnv, found: &mut Vec<Access>) {
    let reads = env.reads.iter().map(|r| &r.value);
    let computed = env.computed.iter().map(|(_, e)| e);
    for expr in reads.chain(&env.coords).chain([&env.step]).chain(computed) {
        expr_accesses(expr, found);
    }
}

fn expr_accesses(expr: &Expr, found: &mut Vec<Access>) {
    match expr {
        Expr::SharedLoad { array, index } => {
            index.iter().for_each(|i| expr_accesses(i, found));
            found.push(Access {
                array: array.clone(),
                slot: literal_slot(index),
                store: false,
            });
        }
        Expr::Load { index, .. } => expr_accesses(index, found),
        Expr::Unary(_, a) | Expr::Cast(_, a) => expr_accesses(a, found),
        Expr::Binary(_, a, b) => {
            expr_accesses(a, found);
            expr_accesses(b, found);
        }
        Expr::Select(c, a, b) => [c, a, b].into_iter().for_each(|e| expr_accesses(e, found)),
        Expr::Literal(..) | Expr::Var(_) | Expr::ThreadIdx(_) | Expr::BlockIdx(_) => {}
    }
}

/// The first index's value when it is an integer literal.
fn literal_slot(index: &[Expr]) -> Option<i64> {
    match index.first()? {
        Expr::Literal(Constant::Int(slot), _) => Some(*slot),
        _ => None,
    }
}
