//! How shapes, grids and element types are written in messages (NumPy's words for NumPy files).

use tessera_ir::ScalarType;

/// A shape as NumPy prints it: `(66, 67)`, `(5,)`, `()`.
pub fn numpy_shape(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A grid as Tessera prints it, slowest axis first: `67x67`.
pub fn grid(shape: &[usize]) -> String {
    shape
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

/// NumPy's name of a stored element type: `float32`, `uint8`, ... (`bf16`: `uint16`, its bits).
pub fn numpy_name(ty: ScalarType) -> &'static str {
    match ty {
        ScalarType::Bool => "bool",
        ScalarType::U8 => "uint8",
        ScalarType::I32 => "int32",
        ScalarType::I64 => "int64",
        ScalarType::F16 => "float16",
        ScalarType::Bf16 => "uint16",
        ScalarType::F32 => "float32",
        ScalarType::F64 => "float64",
    }
}

/// NumPy's name of a dtype descriptor (`<f8` is `float64`); unknown descriptors as written.
pub fn descriptor_name(descr: &str) -> String {
    let code = descr.trim_start_matches(['<', '>', '|', '=']);
    let name = match code {
        "b1" => "bool",
        "i1" => "int8",
        "i2" => "int16",
        "i4" => "int32",
        "i8" => "int64",
        "u1" => "uint8",
        "u2" => "uint16",
        "u4" => "uint32",
        "u8" => "uint64",
        "f2" => "float16",
        "f4" => "float32",
        "f8" => "float64",
        _ => return descr.to_string(),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_shapes_grids_and_dtypes_like_numpy_and_tessera() {
        assert_eq!(numpy_shape(&[66, 67]), "(66, 67)");
        assert_eq!(numpy_shape(&[5]), "(5,)");
        assert_eq!(numpy_shape(&[]), "()");
        assert_eq!(grid(&[4, 5, 6]), "4x5x6");
        assert_eq!(descriptor_name("<f8"), "float64");
        assert_eq!(descriptor_name("|u1"), "uint8");
        assert_eq!(descriptor_name(">i4"), "int32");
        assert_eq!(descriptor_name("<c16"), "<c16");
        assert_eq!(
            numpy_name(ScalarType::F32),
            descriptor_name(ScalarType::F32.numpy_descr())
        );
    }
}
