//! Every evaluation of every reduction as `run` reports it: a CSV file, JSON records, and the
//! values of the summary line, with integer reductions kept integers.

use tessera::Session;
use tessera_runtime::ReductionRecord;

use super::run::compact;

/// A reduction's value in the type of its expression (records carry every value as f64).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReductionValue {
    /// The value of a reduction over an integer (or `bool`) expression.
    Integer(i64),
    /// The value of a reduction over a float expression.
    Float(f64),
}

impl ReductionValue {
    /// The value of `record`, typed as the expression its reduction reduces.
    pub fn of(session: &Session, record: &ReductionRecord) -> ReductionValue {
        let program = session.program();
        let is_float = program.reduction_by_name(&record.name).is_none_or(|id| {
            let value = program.reductions[id].value;
            session.bound().checked().ty(value).is_float()
        });
        if is_float {
            ReductionValue::Float(record.value)
        } else {
            ReductionValue::Integer(record.value as i64)
        }
    }

    /// The value exactly: integers as such (`42`), floats in Rust's shortest form that reads
    /// back to the same f64 (`0.1`, `1e-7`, `2.0`, `NaN`, `inf`, `-inf`).
    pub fn exact(self) -> String {
        match self {
            ReductionValue::Integer(value) => value.to_string(),
            ReductionValue::Float(value) => format!("{value:?}"),
        }
    }

    /// The value in few characters: integers as such, floats with 7 significant digits.
    pub fn compact(self) -> String {
        match self {
            ReductionValue::Integer(value) => value.to_string(),
            ReductionValue::Float(value) => compact(value),
        }
    }

    /// The value as JSON: an integer, a number, or `null` for NaN and infinities (which JSON
    /// cannot hold).
    pub fn json(self) -> serde_json::Value {
        match self {
            ReductionValue::Integer(value) => value.into(),
            ReductionValue::Float(value) => value.into(),
        }
    }
}

/// `step,name,value` then one row per evaluation, in the order of `records`.
pub fn csv(session: &Session, records: &[ReductionRecord]) -> String {
    let mut text = String::from("step,name,value\n");
    for record in records {
        let value = ReductionValue::of(session, record).exact();
        text.push_str(&format!("{},{},{value}\n", record.step, record.name));
    }
    text
}

/// `[{"step": 1, "name": "total", "value": 42}, ...]`, in the order of `records`.
pub fn json(session: &Session, records: &[ReductionRecord]) -> serde_json::Value {
    records
        .iter()
        .map(|record| {
            serde_json::json!({
                "step": record.step,
                "name": record.name,
                "value": ReductionValue::of(session, record).json(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::ReductionValue;

    #[test]
    fn integers_stay_integers_and_floats_read_back_exactly() {
        assert_eq!(ReductionValue::Integer(42).exact(), "42");
        assert_eq!(ReductionValue::Integer(-7).compact(), "-7");
        for value in [0.1, 2.0, 1e-7, 1.0 / 3.0, 1e300, -0.0] {
            let text = ReductionValue::Float(value).exact();
            assert_eq!(
                text.parse::<f64>().unwrap().to_bits(),
                value.to_bits(),
                "{text}"
            );
        }
        assert_eq!(ReductionValue::Float(2.0).exact(), "2.0");
        assert_eq!(ReductionValue::Float(f64::NAN).exact(), "NaN");
        assert_eq!(ReductionValue::Float(f64::INFINITY).exact(), "inf");
        assert_eq!(ReductionValue::Float(f64::NEG_INFINITY).exact(), "-inf");
        assert_eq!(ReductionValue::Integer(42).json(), serde_json::json!(42));
        assert_eq!(
            ReductionValue::Float(f64::NAN).json(),
            serde_json::Value::Null
        );
    }
}
