$Q float ts_f16_to_f32($U16 h) {
    $U32 sign = (($U32)h & 0x8000u) << 16;
    $U32 exponent = (($U32)h >> 10) & 0x1fu;
    $U32 mantissa = ($U32)h & 0x3ffu;
    if (exponent == 0u) {
        if (mantissa == 0u) return ts_f32_from_bits(sign);
        /* A subnormal m * 2^-24: normalise the mantissa into an f32 normal. */
        $U32 biased = 113u;
        while ((mantissa & 0x400u) == 0u) { mantissa <<= 1; biased -= 1u; }
        return ts_f32_from_bits(sign | (biased << 23) | ((mantissa & 0x3ffu) << 13));
    }
    if (exponent == 31u) return ts_f32_from_bits(sign | (mantissa == 0u ? 0x7f800000u : 0x7fc00000u) | (mantissa << 13));
    return ts_f32_from_bits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}
$Q $U16 ts_f32_to_f16(float x) {
    $U32 bits = ts_f32_to_bits(x);
    $U32 sign = (bits >> 16) & 0x8000u;
    $U32 magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) return ($U16)(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
    /* 65520 and above (infinity included) round to infinity. */
    if (magnitude >= 0x477ff000u) return ($U16)(sign | 0x7c00u);
    $U32 exponent = magnitude >> 23;
    if (exponent < 113u) {
        /* Below 2^-14: a subnormal (or zero) f16; below 2^-25 it rounds to zero. */
        if (exponent < 102u) return ($U16)sign;
        return ($U16)(sign | ts_round_shift((magnitude & 0x7fffffu) | 0x800000u, 126u - exponent));
    }
    return ($U16)(sign | ts_round_shift(magnitude - (112u << 23), 13u));
}
