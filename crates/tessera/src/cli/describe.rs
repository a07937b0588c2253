//! Plain-text descriptions of a bound program, shared by `check` and `explain`.

use tessera::Session;
use tessera_analysis::{Domain, FieldRole, Footprint};
use tessera_ir::ReductionPlacement;
use tessera_runtime::memory::{bytes_text, field_bytes};

/// `heat: grid 256x256, 2 fields, 1 stage, 1 reduction`.
pub fn headline(session: &Session) -> String {
    let program = session.program();
    let count = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    format!(
        "{}: grid {}, {}, {}, {}",
        session.name(),
        session.grid_text(),
        count(program.fields.len(), "field"),
        count(program.stages.len(), "stage"),
        count(program.reductions.len(), "reduction")
    )
}

/// One line per field, stage and reduction: types, roles, borders, domains and footprints.
pub fn details(session: &Session) -> Vec<String> {
    let bound = session.bound();
    let program = session.program();
    let mut lines = vec![
        format!(
            "grid {} ({} points), {} step(s) by default",
            session.grid_text(),
            bound.cell_count(),
            session.default_steps()
        ),
        format!(
            "memory: fields {} on the host (a backend adds its buffers: `tessera explain`)",
            bytes_text(field_bytes(bound))
        ),
    ];
    for (id, field) in program.fields.iter() {
        let role = match bound.checked().role(id) {
            FieldRole::Updated => "updated",
            FieldRole::ReadOnly => "read-only",
            FieldRole::Unused => "unused",
        };
        let border = field
            .border
            .map(|b| format!(", border {}", tessera_ir::printer::border_text(b)))
            .unwrap_or_default();
        lines.push(format!(
            "field {}: {}, {role}{border}",
            field.name, field.ty
        ));
    }
    for (id, stage) in program.stages.iter() {
        let domain = bound.stage_domain(id);
        let reads: Vec<String> = bound
            .checked()
            .stage_footprints(id)
            .iter()
            .map(|(field, fp)| format!("{} {}", program.fields[*field].name, footprint_text(fp)))
            .collect();
        let scans = stage.scans();
        let writes: Vec<String> = (stage.outputs().iter())
            .map(|f| match scans.iter().find(|(g, _)| g == f) {
                Some((_, scan)) => format!(
                    "{} (a scan: {} along {}{})",
                    program.fields[*f].name,
                    scan.op.name(),
                    program.axis_names()[scan.axis],
                    if scan.exclusive { ", exclusive" } else { "" }
                ),
                None => program.fields[*f].name.clone(),
            })
            .collect();
        lines.push(format!(
            "stage {}: {} ({} points); reads {}; writes {}",
            stage.name,
            domain_text(domain),
            points(domain),
            if reads.is_empty() {
                "nothing".to_string()
            } else {
                reads.join(", ")
            },
            writes.join(", ")
        ));
    }
    for (id, reduction) in program.reductions.iter() {
        let place = match &reduction.placement {
            ReductionPlacement::InStage(stage) => {
                format!("in stage {}", program.stages[*stage].name)
            }
            ReductionPlacement::AfterStep { .. } => "after the step".to_string(),
        };
        let domain = &bound.reduction_domains[id.index()];
        lines.push(format!(
            "reduce {} = {} every {} step(s), {place}, over {} ({} points)",
            reduction.name,
            reduction.op.name(),
            reduction.every,
            domain_text(domain),
            points(domain)
        ));
    }
    if program.until.is_some() {
        lines.push("stops early when its `until` condition holds".to_string());
    }
    lines
}

/// `[1..255, 0..256 by 2]`.
fn domain_text(domain: &Domain) -> String {
    let axes: Vec<String> = (0..domain.rect.dims())
        .map(|a| {
            let stride = if domain.stride[a] == 1 {
                String::new()
            } else {
                format!(" by {}", domain.stride[a])
            };
            format!("{}..{}{stride}", domain.rect.lo[a], domain.rect.hi[a])
        })
        .collect();
    format!("[{}]", axes.join(", "))
}

/// Points a domain covers.
fn points(domain: &Domain) -> u128 {
    if domain.rect.is_empty() {
        return 0;
    }
    (0..domain.rect.dims())
        .map(|a| ((domain.rect.hi[a] - 1 - domain.rect.lo[a]) / domain.stride[a] + 1) as u128)
        .product()
}

/// `at 5 offsets within [-1..1, -1..1]`.
fn footprint_text(fp: &Footprint) -> String {
    let boxed: Vec<String> = fp
        .min
        .iter()
        .zip(&fp.max)
        .map(|(lo, hi)| format!("{lo}..{hi}"))
        .collect();
    let n = fp.offsets.len();
    format!(
        "at {n} offset{} within [{}]",
        if n == 1 { "" } else { "s" },
        boxed.join(", ")
    )
}
