//! NumPy arrays in and out of runs, without copies where the layout allows.
//!
//! In: an input that is a writeable, C-contiguous NumPy array of the field's dtype and the
//! grid's shape is lent to the run: the run reads and writes it in place, and the result's
//! field is that same array. Anything else of the right dtype (a Fortran-ordered or strided
//! array, a read-only array, a nested list) is copied once into a fresh C-contiguous array,
//! which is then lent the same way; an array of another dtype or shape is a `ValueError`.
//! A struct or vector field takes one array with a trailing component axis (copied into one
//! array per component). Objects that speak DLPack (a PyTorch CPU tensor) are taken through
//! `numpy.from_dlpack`, sharing their memory; device memory is refused.
//!
//! Out: every other field's buffer becomes a NumPy array that owns Tessera's allocation.

use numpy::ndarray::{ArrayD, IxDyn};
use numpy::{
    Element, PyArray, PyArrayDescr, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods,
    PyUntypedArray, PyUntypedArrayMethods,
};
use std::ptr::NonNull;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyEllipsis, PyTuple};
use tessera::io::describe::numpy_shape;
use tessera::ir::{ReceiverPoints, ScalarType};
use tessera::runtime::{Buffer, FieldSet, Storage};
use tessera::{FieldRef, Session};

use crate::errors::IntoPy;

/// An array lent to a run as the storage of one field, borrowed exclusively meanwhile.
pub struct Lent<'py> {
    /// The field's index.
    field: usize,
    /// The array (the caller's, or the converted copy).
    array: Bound<'py, PyUntypedArray>,
    /// Its elements' bytes (valid while `_borrow` lives).
    start: NonNull<u8>,
    bytes: usize,
    /// The exclusive borrow: held, never read, until the loan is settled.
    _borrow: Box<dyn Held + 'py>,
}

/// What a loan holds only to keep it in force (NumPy's exclusive borrow of the array).
trait Held {}

impl<T> Held for T {}

/// The fields' storage for a run: each input lent (or converted once, then lent), the
/// declared initial values for the rest, and the loans to settle after the run.
pub fn fields_with_inputs<'py>(
    py: Python<'py>,
    session: &Session,
    inputs: Option<&Bound<'py, PyDict>>,
) -> PyResult<(FieldSet, Vec<Lent<'py>>)> {
    let mut supplied: Vec<Option<Buffer>> = vec![None; session.program().fields.len()];
    let mut tables: Vec<Option<Buffer>> = vec![None; session.program().tables.len()];
    let mut points: Vec<Option<Vec<Vec<i64>>>> = vec![None; session.program().receivers.len()];
    let mut loans = Vec::new();
    for (key, value) in inputs.into_iter().flat_map(|d| d.iter()) {
        let name: String = key.extract()?;
        if let Some(table) = session.table(&name) {
            tables[table] = Some(table_values(py, session, table, &value)?);
            continue;
        }
        if let Some(receiver) = session.program().receiver_by_name(&name) {
            points[receiver.index()] = Some(receiver_points(py, session, receiver, &value)?);
            continue;
        }
        let field = session.field(&name).py_err()?;
        for (component, ty, array) in component_arrays(py, session, &field, &value)? {
            if supplied[component].is_some() {
                return Err(PyValueError::new_err(format!(
                    "field `{}` is given twice (by `{name}` and another input)",
                    session
                        .program()
                        .fields
                        .values()
                        .nth(component)
                        .map_or("", |f| &f.name)
                )));
            }
            let (buffer, loan) = lend(py, component, ty, array)?;
            supplied[component] = Some(buffer);
            loans.push(loan);
        }
    }
    let mut fields = py.detach(|| session.fields_with(supplied)).py_err()?;
    for ((table, given), slot) in (session.program().tables.values())
        .zip(tables)
        .zip(&mut fields.tables)
    {
        *slot = given.ok_or_else(|| {
            PyValueError::new_err(format!(
                "the table `{}` has no values: give them in `inputs` (`inputs={{\"{}\": values}}`, a 1D array of {}, one value per step)",
                table.name, table.name, table.ty
            ))
        })?;
    }
    for (receiver, given) in session.program().receivers.values().zip(&points) {
        if given.is_none() && receiver.points == ReceiverPoints::Input {
            return Err(PyValueError::new_err(format!(
                "the receiver `{0}` has no points: give them in `inputs` (`inputs={{\"{0}\": points}}`, integers of shape (n, {1}), one row per point, slowest axis first)",
                receiver.name,
                session.program().dims()
            )));
        }
    }
    fields.receiver_points = points;
    Ok((fields, loans))
}

/// The points of `receiver` from `value`: integers of shape `(n, dims)`, for a receiver
/// declared `at input` (one whose points the program gives is refused).
fn receiver_points<'py>(
    py: Python<'py>,
    session: &Session,
    receiver: tessera::ir::Id<tessera::ir::Receiver>,
    value: &Bound<'py, PyAny>,
) -> PyResult<Vec<Vec<i64>>> {
    let program = session.program();
    let name = &program.receivers[receiver].name;
    if program.receivers[receiver].points != ReceiverPoints::Input {
        return Err(PyValueError::new_err(format!(
            "the receiver `{name}` records at the points the program gives; only a receiver declared `at input` takes them in `inputs`"
        )));
    }
    let dims = program.dims();
    let numpy = py.import("numpy")?;
    let array = numpy.call_method1("asarray", (value,))?;
    let kind: String = array.getattr("dtype")?.getattr("kind")?.extract()?;
    let shape: Vec<usize> = array.getattr("shape")?.extract()?;
    if !matches!(kind.as_str(), "i" | "u") || shape.len() != 2 || shape[1] != dims {
        return Err(PyValueError::new_err(format!(
            "the receiver `{name}` needs integer points of shape (n, {dims}), but the array given has shape {} and dtype kind `{kind}`",
            numpy_shape(&shape)
        )));
    }
    let flat: Vec<i64> = array
        .call_method1("astype", ("int64",))?
        .call_method0("ravel")?
        .call_method0("tolist")?
        .extract()?;
    Ok(flat.chunks(dims).map(<[i64]>::to_vec).collect())
}

/// The values of input table `table` from `value` (a 1D array of its dtype, or a sequence),
/// copied: tables are small and only read.
fn table_values<'py>(
    py: Python<'py>,
    session: &Session,
    table: usize,
    value: &Bound<'py, PyAny>,
) -> PyResult<Buffer> {
    let declared = session.program().tables.values().nth(table);
    let (name, ty) = declared.map_or(("", ScalarType::F64), |t| (t.name.as_str(), t.ty));
    let value = &from_dlpack(py, name, value)?;
    if let Ok(array) = value.cast::<PyUntypedArray>() {
        check_dtype(py, name, array, ty)?;
    }
    let kwargs = PyDict::new(py);
    kwargs.set_item("dtype", dtype(py, ty)?)?;
    kwargs.set_item("order", "C")?;
    let numpy = py.import("numpy")?;
    let array = numpy.call_method("array", (value,), Some(&kwargs))?;
    let array = array.cast_into::<PyUntypedArray>()?;
    if array.ndim() != 1 {
        return Err(PyValueError::new_err(format!(
            "table `{name}` needs a 1D array (one value per step), but the array given has shape {}",
            numpy_shape(array.shape())
        )));
    }
    let bytes = array.call_method0("tobytes")?;
    let bytes = bytes.cast::<PyBytes>()?;
    Ok(Buffer::from_bytes(ty, bytes.as_bytes()))
}

/// One C-contiguous array of the grid's shape per component of `field`: its field index, its
/// type, the array.
fn component_arrays<'py>(
    py: Python<'py>,
    session: &Session,
    field: &FieldRef,
    value: &Bound<'py, PyAny>,
) -> PyResult<Vec<(usize, ScalarType, Bound<'py, PyUntypedArray>)>> {
    let extents = &session.bound().extents;
    let ty = field.types[0];
    if let [component] = field.components[..] {
        let array = contiguous(py, &field.name, value, ty, extents)?;
        return Ok(vec![(component, ty, array)]);
    }
    let mut shape = extents.clone();
    shape.push(field.components.len());
    let whole = convert(py, &field.name, value, ty, &shape, false)?;
    let mut arrays = Vec::new();
    for (c, (&component, &component_ty)) in field.components.iter().zip(&field.types).enumerate() {
        let index = PyTuple::new(
            py,
            [
                PyEllipsis::get(py).to_owned().into_any(),
                c.into_pyobject(py)?.into_any(),
            ],
        )?;
        let slice = whole.get_item(index)?;
        let name = format!("{}[..., {c}]", field.name);
        let array = convert(py, &name, &slice, component_ty, extents, true)?;
        arrays.push((component, component_ty, array));
    }
    Ok(arrays)
}

/// `value` itself when it is a writeable C-contiguous array of `ty` and shape `extents`,
/// else a C-contiguous copy; a `ValueError` naming `name` for another dtype or shape.
fn contiguous<'py>(
    py: Python<'py>,
    name: &str,
    value: &Bound<'py, PyAny>,
    ty: ScalarType,
    extents: &[usize],
) -> PyResult<Bound<'py, PyUntypedArray>> {
    let value = &from_dlpack(py, name, value)?;
    if let Ok(array) = value.cast::<PyUntypedArray>() {
        check_dtype(py, name, array, ty)?;
        check_shape(name, array, extents)?;
        if array.is_c_contiguous() && is_writeable(array)? {
            return Ok(array.clone());
        }
    }
    convert(py, name, value, ty, extents, true)
}

/// A NumPy array over the memory of a DLPack producer that is not an array already (a
/// PyTorch CPU tensor, for instance), sharing it; other values unchanged. A producer on a
/// device is a `ValueError`: runs take host memory.
fn from_dlpack<'py>(
    py: Python<'py>,
    name: &str,
    value: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    if value.is_instance_of::<PyUntypedArray>() || !value.hasattr("__dlpack__")? {
        return Ok(value.clone());
    }
    const DLPACK_CPU: i64 = 1;
    let (device_type, device_id): (i64, i64) =
        value.call_method0("__dlpack_device__")?.extract()?;
    if device_type != DLPACK_CPU {
        return Err(PyValueError::new_err(format!(
            "field `{name}`: the array lives on DLPack device type {device_type} (id {device_id}; 2 is CUDA), but runs take host memory; copy it to the host first (e.g. `cupy.asnumpy`, `tensor.cpu()`)"
        )));
    }
    py.import("numpy")?.call_method1("from_dlpack", (value,))
}

/// A new C-contiguous array of `ty` from `value` (any array of that dtype, or a sequence),
/// of shape `shape`.
fn convert<'py>(
    py: Python<'py>,
    name: &str,
    value: &Bound<'py, PyAny>,
    ty: ScalarType,
    shape: &[usize],
    copy: bool,
) -> PyResult<Bound<'py, PyUntypedArray>> {
    if let Ok(array) = value.cast::<PyUntypedArray>() {
        check_dtype(py, name, array, ty)?;
    }
    let numpy = py.import("numpy")?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("dtype", dtype(py, ty)?)?;
    kwargs.set_item("order", "C")?;
    kwargs.set_item("copy", copy)?;
    let array = numpy.call_method("array", (value,), Some(&kwargs))?;
    let array = array.cast_into::<PyUntypedArray>()?;
    check_shape(name, &array, shape)?;
    Ok(array)
}

/// The NumPy dtype of a field type (`bf16`, which NumPy lacks: `uint16`, its bit patterns).
fn dtype(py: Python<'_>, ty: ScalarType) -> PyResult<Bound<'_, PyArrayDescr>> {
    Ok(match ty {
        ScalarType::U8 => numpy::dtype::<u8>(py),
        ScalarType::I32 => numpy::dtype::<i32>(py),
        ScalarType::I64 => numpy::dtype::<i64>(py),
        ScalarType::F16 => PyArrayDescr::new(py, "float16")?,
        ScalarType::Bf16 => numpy::dtype::<u16>(py),
        ScalarType::F32 => numpy::dtype::<f32>(py),
        ScalarType::F64 | ScalarType::Bool => numpy::dtype::<f64>(py),
    })
}

/// The NumPy name of a field type's dtype (`float32`).
pub fn dtype_name(py: Python<'_>, ty: ScalarType) -> PyResult<String> {
    Ok(dtype(py, ty)?.str()?.to_string())
}

/// `array` (C-contiguous) viewed with dtype `name`, sharing its memory: `float16` arrays are
/// lent and handed out as their `uint16` bit patterns.
fn view_as<'py>(array: &Bound<'py, PyAny>, name: &str) -> PyResult<Bound<'py, PyUntypedArray>> {
    Ok(array
        .call_method1("view", (name,))?
        .cast_into::<PyUntypedArray>()?)
}

/// A `ValueError` unless `array` holds `ty` values.
fn check_dtype(
    py: Python<'_>,
    name: &str,
    array: &Bound<'_, PyUntypedArray>,
    ty: ScalarType,
) -> PyResult<()> {
    let expected = dtype(py, ty)?;
    let given = array.dtype();
    if given.is_equiv_to(&expected) {
        return Ok(());
    }
    Err(PyValueError::new_err(format!(
        "field `{name}` holds `{ty}` values (NumPy {}), but the array given has dtype {}; convert it with `.astype(numpy.{})`",
        expected.str()?,
        given.str()?,
        expected.str()?
    )))
}

/// A `ValueError` unless `array` has shape `shape`.
fn check_shape(name: &str, array: &Bound<'_, PyUntypedArray>, shape: &[usize]) -> PyResult<()> {
    if array.shape() == shape {
        return Ok(());
    }
    Err(PyValueError::new_err(format!(
        "field `{name}` needs an array of shape {}, but the array given has shape {}",
        numpy_shape(shape),
        numpy_shape(array.shape())
    )))
}

/// Whether NumPy lets the array be written.
fn is_writeable(array: &Bound<'_, PyUntypedArray>) -> PyResult<bool> {
    array.getattr("flags")?.getattr("writeable")?.extract()
}

/// Lends `array` (C-contiguous, of type `ty`) as field `field`'s storage.
fn lend<'py>(
    py: Python<'py>,
    field: usize,
    ty: ScalarType,
    array: Bound<'py, PyUntypedArray>,
) -> PyResult<(Buffer, Lent<'py>)> {
    match ty {
        ScalarType::U8 => lend_as(py, field, array, Buffer::U8),
        ScalarType::I32 => lend_as(py, field, array, Buffer::I32),
        ScalarType::I64 => lend_as(py, field, array, Buffer::I64),
        ScalarType::F16 => {
            let (buffer, mut loan) = lend_as(py, field, view_as(&array, "uint16")?, Buffer::F16)?;
            loan.array = view_as(&loan.array, "float16")?;
            Ok((buffer, loan))
        }
        ScalarType::Bf16 => lend_as(py, field, array, Buffer::Bf16),
        ScalarType::F32 => lend_as(py, field, array, Buffer::F32),
        ScalarType::F64 | ScalarType::Bool => lend_as(py, field, array, Buffer::F64),
    }
}

/// [`lend`] for element type `T`: borrows the array exclusively (an array another loan
/// already borrows, the same array given twice, is copied first) and makes storage over it.
fn lend_as<'py, T: Element + 'py>(
    py: Python<'py>,
    field: usize,
    array: Bound<'py, PyUntypedArray>,
    buffer: fn(Storage<T>) -> Buffer,
) -> PyResult<(Buffer, Lent<'py>)> {
    let typed = array.cast::<PyArrayDyn<T>>()?;
    let (array, mut guard) = match typed.try_readwrite() {
        Ok(guard) => (array.clone(), guard),
        Err(_) => {
            let copy = PyArray::from_owned_array(py, typed.to_owned_array());
            let guard = copy
                .try_readwrite()
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            (copy.into_any().cast_into::<PyUntypedArray>()?, guard)
        }
    };
    let slice = guard
        .as_slice_mut()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let (len, bytes) = (slice.len(), std::mem::size_of_val(slice));
    let start = NonNull::new(slice.as_mut_ptr()).unwrap_or(NonNull::dangling());
    // SAFETY: the guard borrows the array exclusively (for Rust code) until the loan is
    // settled after the run, and keeps it alive; Python code is told not to touch an input
    // during a run.
    let storage = unsafe { Storage::lent(start, len) };
    let loan = Lent {
        field,
        array,
        start: start.cast(),
        bytes,
        _borrow: Box::new(guard),
    };
    Ok((buffer(storage), loan))
}

/// Every field as a NumPy array, by field name: lent arrays (holding the run's result; copied
/// back in the rare case a backend left it in storage of its own), and Tessera's other
/// buffers handed over without copying.
pub fn fields_to_py<'py>(
    py: Python<'py>,
    session: &Session,
    fields: FieldSet,
    loans: Vec<Lent<'py>>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    let shape = fields.shape.clone();
    let mut loans: Vec<Option<Lent<'py>>> = loans.into_iter().map(Some).collect();
    for ((_, declared), (index, buffer)) in
        (session.program().fields.iter()).zip(fields.buffers.into_iter().enumerate())
    {
        let loan = loans
            .iter_mut()
            .find(|l| l.as_ref().is_some_and(|l| l.field == index))
            .and_then(Option::take);
        let array = match loan {
            Some(loan) => settle(loan, &buffer),
            None => owned_to_py(py, buffer, &shape)?,
        };
        dict.set_item(&declared.name, array)?;
    }
    Ok(dict)
}

/// The lent array, holding `buffer`'s values.
fn settle<'py>(loan: Lent<'py>, buffer: &Buffer) -> Bound<'py, PyAny> {
    let values = buffer.as_bytes();
    if loan.start.as_ptr().cast_const() != values.as_ptr() {
        // SAFETY: the loan's borrow still holds the array's `bytes` bytes exclusively; plain
        // numbers of the field's type and length (checked when the fields were made).
        let target = unsafe { std::slice::from_raw_parts_mut(loan.start.as_ptr(), loan.bytes) };
        target.copy_from_slice(values);
    }
    loan.array.into_any()
}

/// A NumPy array owning `buffer`'s allocation (lent storage, which has a loan, never comes
/// here; it would be copied).
pub fn owned_to_py<'py>(
    py: Python<'py>,
    buffer: Buffer,
    shape: &[usize],
) -> PyResult<Bound<'py, PyAny>> {
    fn array<'py, T: Element + Copy + Default>(
        py: Python<'py>,
        storage: Storage<T>,
        shape: &[usize],
    ) -> PyResult<Bound<'py, PyAny>> {
        let array = ArrayD::from_shape_vec(IxDyn(shape), storage.into_owned())
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyArray::from_owned_array(py, array).into_any())
    }
    match buffer {
        Buffer::U8(s) => array(py, s, shape),
        Buffer::I32(s) => array(py, s, shape),
        Buffer::I64(s) => array(py, s, shape),
        Buffer::F16(s) => Ok(view_as(&array(py, s, shape)?, "float16")?.into_any()),
        Buffer::Bf16(s) => array(py, s, shape),
        Buffer::F32(s) => array(py, s, shape),
        Buffer::F64(s) => array(py, s, shape),
    }
}
