$Q float ts_bf16_to_f32($U16 b) { return ts_f32_from_bits(($U32)b << 16); }
$Q $U16 ts_f32_to_bf16(float x) {
    $U32 bits = ts_f32_to_bits(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return ($U16)((bits >> 16) | 0x40u);
    return ($U16)ts_round_shift(bits, 16u);
}
