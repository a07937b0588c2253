/* f32 <-> f16/bf16 conversions on bit patterns: the C twin of tessera_ir::half (integer
   operations only, so that every target computes the same bits, flush-to-zero or not). */
$Q $U32 ts_f32_to_bits(float x) { $F32_TO_BITS }
$Q $U32 ts_round_shift($U32 value, $U32 shift) {
    $U32 quotient = value >> shift;
    $U32 remainder = value & ((($U32)1 << shift) - 1u);
    $U32 midpoint = ($U32)1 << (shift - 1u);
    return (remainder > midpoint || (remainder == midpoint && (quotient & 1u) == 1u)) ? quotient + 1u : quotient;
}
