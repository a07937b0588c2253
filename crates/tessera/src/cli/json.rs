//! What every JSON report of the command line (`bench --json`, `run --json`) holds.

use tessera::Session;

/// One JSON object: the keys that say what ran (`program`, `backend`, `size`, `types`) and the
/// command's own keys, those of the object `rest`.
pub fn report(session: &Session, backend: &str, rest: serde_json::Value) -> serde_json::Value {
    let mut object = serde_json::Map::new();
    object.insert("program".into(), session.name().into());
    object.insert("backend".into(), backend.into());
    object.insert("size".into(), session.grid_text().into());
    object.insert("types".into(), session.updated_types_text().into());
    if let serde_json::Value::Object(rest) = rest {
        object.extend(rest);
    }
    object.into()
}
