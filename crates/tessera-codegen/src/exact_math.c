/* Tessera's exact math: the C twin of `tessera_ir::exact_math` (same operations, same order;
   IEEE-754 basic operations, floor, fmod, fabs, integer arithmetic and bit casts only; compiled
   without contraction). Qualifiers, the 64-bit type, constants and polynomials are filled in
   per dialect from the Rust module's tables by `tessera-codegen/src/exact_math.rs`. */
typedef struct { double hi; double lo; } ts_dd;
typedef struct { int quadrant; double hi; double lo; } ts_em_reduced;
$Q ts_dd ts_em_dd(double hi, double lo) { ts_dd r; r.hi = hi; r.lo = lo; return r; }
$Q int ts_em_sign_bit(double x) { return (ts_f64_to_bits(x) >> 63) != 0; }
$Q double ts_em_pow2(int n) { return ts_f64_from_bits((($U64)(n + 1023)) << 52); }
$Q double ts_em_scale(double y, int k) {
    if (k > 1023) return (y * ts_em_pow2(1023)) * ts_em_pow2(k - 1023);
    if (k < -1021) return (y * ts_em_pow2(k + 54)) * ts_em_pow2(-54);
    return y * ts_em_pow2(k);
}
$Q ts_dd ts_em_two_sum(double a, double b) {
    double s = a + b;
    double bb = s - a;
    return ts_em_dd(s, (a - (s - bb)) + (b - bb));
}
$Q ts_dd ts_em_fast_two_sum(double a, double b) {
    double s = a + b;
    return ts_em_dd(s, b - (s - a));
}
$Q ts_dd ts_em_split(double a) {
    double c = {SPLITTER} * a;
    double hi = c - (c - a);
    return ts_em_dd(hi, a - hi);
}
$Q ts_dd ts_em_two_prod(double a, double b) {
    double p = a * b;
    ts_dd x = ts_em_split(a);
    ts_dd y = ts_em_split(b);
    return ts_em_dd(p, (((x.hi * y.hi - p) + x.hi * y.lo) + x.lo * y.hi) + x.lo * y.lo);
}
$Q double ts_em_exp_core(double x, double tail) {
    double k = floor(x * {INV_LN2} + 0.5);
    double hi = x - k * {LN2_HI};
    double lo = k * {LN2_LO};
    double r = hi - lo;
    double c = ((hi - r) - lo) + tail;
    double p = (r * r) * ts_em_exp_taylor(r);
    double y = 1.0 + (r + (p + c * (1.0 + (r + p))));
    return ts_em_scale(y, (int)k);
}
$Q double ts_exp_f64(double x) {
    if (x != x) return x;
    if (x > {EXP_OVERFLOW}) return {INF};
    if (x < {EXP_UNDERFLOW}) return 0.0;
    return ts_em_exp_core(x, 0.0);
}
/* x = 2^e m for finite x > 0: (e, m) with m in [sqrt(2)/2, sqrt(2)]. */
$Q ts_dd ts_em_split_exponent(double x) {
    int bias = 0;
    if (x < {MIN_NORMAL}) {
        x = x * {TWO_54};
        bias = 54;
    }
    $U64 bits = ts_f64_to_bits(x);
    int e = (int)(bits >> 52) - 1023 - bias;
    double m = ts_f64_from_bits((bits & ($U64)0x000fffffffffffff) | ($U64)0x3ff0000000000000);
    if (m > {SQRT2}) return ts_em_dd((double)(e + 1), m * 0.5);
    return ts_em_dd((double)e, m);
}
$Q double ts_log_f64(double x) {
    if (x != x) return x;
    if (x < 0.0) return {NAN};
    if (x == 0.0) return -{INF};
    if (x == {INF}) return x;
    ts_dd em = ts_em_split_exponent(x);
    double e = em.hi;
    double f = em.lo - 1.0;
    double s = f / (2.0 + f);
    double z = s * s;
    double r = z * ({TWO_THIRDS} + z * ts_em_log_tail(z));
    double hfsq = (0.5 * f) * f;
    return e * {LN2_HI} + (f - (hfsq - (s * (hfsq + r) + e * {LN2_LO})));
}
$Q ts_dd ts_em_log_mantissa_dd(double m) {
    double f = m - 1.0;
    ts_dd den = ts_em_two_sum(m, 1.0);
    double s_hi = f / den.hi;
    ts_dd p = ts_em_two_prod(s_hi, den.hi);
    double s_lo = (((f - p.hi) - p.lo) - s_hi * den.lo) / den.hi;
    ts_dd z = ts_em_two_prod(s_hi, s_hi);
    ts_dd c = ts_em_two_prod(z.hi, s_hi);
    double c_lo = c.lo + (z.lo * s_hi + (3.0 * z.hi) * s_lo);
    ts_dd t = ts_em_two_prod(c.hi, {TWO_THIRDS});
    double t_lo = t.lo + (c_lo * {TWO_THIRDS} + c.hi * {TWO_THIRDS_LO});
    double rest = (s_hi * (z.hi * z.hi)) * ts_em_log_tail(z.hi);
    ts_dd l = ts_em_fast_two_sum(2.0 * s_hi, t.hi);
    return ts_em_dd(l.hi, l.lo + (2.0 * s_lo + (t_lo + rest)));
}
$Q ts_dd ts_em_log_dd(double x) {
    ts_dd em = ts_em_split_exponent(x);
    ts_dd l = ts_em_log_mantissa_dd(em.lo);
    ts_dd a = ts_em_two_sum(em.hi * {LN2_HI}, l.hi);
    return ts_em_fast_two_sum(a.hi, a.lo + (l.lo + em.hi * {LN2_LO}));
}
$Q int ts_em_is_odd(double y) {
    double y_half = 0.5 * y;
    return y == floor(y) && fabs(y) < {TWO_53} && y_half != floor(y_half);
}
$Q double ts_em_pow_limit(double ax, double y) {
    if (ax == 1.0) return 1.0;
    if ((ax > 1.0) == (y > 0.0)) return {INF};
    return 0.0;
}
$Q double ts_pow_f64(double x, double y) {
    double ax = fabs(x);
    double ay = fabs(y);
    if (y == 0.0 || x == 1.0) return 1.0;
    if (x != x) return x;
    if (y != y) return y;
    if (ay == {INF}) return ts_em_pow_limit(ax, y);
    double sign = (ts_em_sign_bit(x) && ts_em_is_odd(y)) ? -1.0 : 1.0;
    if (x < 0.0 && ax != {INF} && y != floor(y)) return {NAN};
    if (ax == 0.0) return sign * (y < 0.0 ? {INF} : 0.0);
    if (ax == {INF}) return sign * (y < 0.0 ? 0.0 : {INF});
    if (ay > {TWO_64}) return ts_em_pow_limit(ax, y);
    ts_dd l = ts_em_log_dd(ax);
    ts_dd p = ts_em_two_prod(y, l.hi);
    ts_dd w = ts_em_fast_two_sum(p.hi, p.lo + y * l.lo);
    if (w.hi > {EXP_OVERFLOW}) return sign * {INF};
    if (w.hi < {EXP_UNDERFLOW}) return sign * 0.0;
    return sign * ts_em_exp_core(w.hi, w.lo);
}
$TABLE $U64 ts_em_two_over_pi[40] = { {TWO_OVER_PI_BITS} };
/* The 192 bits of 2/pi from bit `start` (after 64 zero bits) as six 32-bit limbs, least
   significant first. */
$Q void ts_em_two_over_pi_window(int start, $U64 *w) {
    int word = start / 32;
    int shift = start % 32;
    for (int i = 0; i < 6; i++) {
        $U64 hi = ts_em_two_over_pi[word + 5 - i];
        $U64 lo = ts_em_two_over_pi[word + 6 - i];
        w[i] = ((hi << shift) | (lo >> (32 - shift))) & ($U64)0xffffffff;
    }
}
/* m w for a 53-bit m and six 32-bit limbs w: eight 32-bit limbs, least significant first. */
$Q void ts_em_mul_limbs($U64 m, const $U64 *w, $U64 *p) {
    for (int i = 0; i < 8; i++) p[i] = 0;
    for (int j = 0; j < 2; j++) {
        $U64 mj = j == 0 ? (m & ($U64)0xffffffff) : (m >> 32);
        $U64 carry = 0;
        for (int i = 0; i < 6; i++) {
            $U64 t = w[i] * mj + p[i + j] + carry;
            p[i + j] = t & ($U64)0xffffffff;
            carry = t >> 32;
        }
        p[j + 6] = carry;
    }
}
/* |x| = k pi/2 + r for finite |x| > TRIG_REDUCTION_LIMIT (Payne and Hanek). */
$Q ts_em_reduced ts_em_reduce_large(double x) {
    $U64 bits = ts_f64_to_bits(x) & ($U64)0x7fffffffffffffff;
    int e = (int)(bits >> 52) - 1075;
    $U64 m = (bits & ($U64)0x000fffffffffffff) | ($U64)0x0010000000000000;
    $U64 w[6];
    $U64 p[8];
    ts_em_two_over_pi_window(e + 62, w);
    ts_em_mul_limbs(m, w, p);
    int quadrant = (int)((p[5] >> 30) & 3);
    ts_dd f = ts_em_two_sum((double)(p[5] & ($U64)0x3fffffff) * {TWO_M30}, (double)p[4] * {TWO_M62});
    f = ts_em_fast_two_sum(f.hi, f.lo + ((double)p[3] * {TWO_M94} + (double)p[2] * {TWO_M126}));
    if (f.hi >= 0.5) {
        quadrant += 1;
        f = ts_em_fast_two_sum(f.hi - 1.0, f.lo);
    }
    ts_dd r = ts_em_two_prod(f.hi, {PIO2_HI});
    r = ts_em_fast_two_sum(r.hi, r.lo + (f.hi * {PIO2_LO} + f.lo * {PIO2_HI}));
    ts_em_reduced out;
    if (x < 0.0) {
        out.quadrant = (4 - quadrant) & 3;
        out.hi = -r.hi;
        out.lo = -r.lo;
    } else {
        out.quadrant = quadrant & 3;
        out.hi = r.hi;
        out.lo = r.lo;
    }
    return out;
}
$Q ts_em_reduced ts_em_reduce_quadrant(double x) {
    if (fabs(x) > {TRIG_REDUCTION_LIMIT}) return ts_em_reduce_large(x);
    double k = floor(x * {TWO_OVER_PI} + 0.5);
    double y0 = x - k * {PIO2_1};
    ts_dd y1 = ts_em_two_sum(y0, -(k * {PIO2_2}));
    ts_dd r = ts_em_two_sum(y1.hi, y1.lo - k * {PIO2_3});
    ts_em_reduced out;
    out.quadrant = (int)(k - 4.0 * floor(k * 0.25));
    out.hi = r.hi;
    out.lo = r.lo;
    return out;
}
$Q double ts_em_sin_kernel(double r, double r_lo) {
    double z = r * r;
    return r + (r_lo + (r * z) * ts_em_sin_taylor(z));
}
$Q double ts_em_cos_kernel(double r, double r_lo) {
    double z = r * r;
    double hz = 0.5 * z;
    double w = 1.0 - hz;
    return w + (((1.0 - w) - hz) + ((z * z) * ts_em_cos_taylor(z) - r * r_lo));
}
/* The sine of x + quarter pi/2: sin (quarter 0) and cos (quarter 1). */
$Q double ts_em_sin_quarters(double x, int quarter) {
    if (x != x) return x;
    if (fabs(x) == {INF}) return {NAN};
    ts_em_reduced r = ts_em_reduce_quadrant(x);
    int n = (r.quadrant + quarter) & 3;
    if (n == 0) return ts_em_sin_kernel(r.hi, r.lo);
    if (n == 1) return ts_em_cos_kernel(r.hi, r.lo);
    if (n == 2) return -ts_em_sin_kernel(r.hi, r.lo);
    return -ts_em_cos_kernel(r.hi, r.lo);
}
$Q double ts_sin_f64(double x) {
    if (fabs(x) < {SIN_TINY}) return x;
    return ts_em_sin_quarters(x, 0);
}
$Q double ts_cos_f64(double x) { return ts_em_sin_quarters(x, 1); }
$Q double ts_em_atan_unit(double t) {
    double c = 1.0, hi = {PIO4}, lo = {PIO4_LO};
    if (t < 0.125) {
        c = 0.0; hi = 0.0; lo = 0.0;
    } else if (t < 0.375) {
        c = 0.25; hi = {ATAN_QUARTER_HI}; lo = {ATAN_QUARTER_LO};
    } else if (t < 0.625) {
        c = 0.5; hi = {ATAN_HALF_HI}; lo = {ATAN_HALF_LO};
    } else if (t < 0.875) {
        c = 0.75; hi = {ATAN_THREE_QUARTERS_HI}; lo = {ATAN_THREE_QUARTERS_LO};
    }
    double u = (t - c) / (1.0 + t * c);
    double z = u * u;
    return hi + (lo + (u + (u * z) * ts_em_atan_series(z)));
}
/* The angle of (x, y) in [0, pi] for finite x and y, not both zero, from |y| and x. */
$Q double ts_em_atan2_upper(double ay, double x) {
    double ax = fabs(x);
    int first_octant = ay <= ax;
    double t = first_octant ? ay / ax : ax / ay;
    double a = ts_em_atan_unit(t);
    ts_dd angle = ts_em_dd(a, 0.0);
    if (!first_octant) {
        ts_dd d = ts_em_fast_two_sum({PIO2_HI}, -a);
        angle = ts_em_dd(d.hi, {PIO2_LO} + d.lo);
    }
    if (ts_em_sign_bit(x)) return ({PI_HI} - angle.hi) + ({PI_LO} - angle.lo);
    return angle.hi + angle.lo;
}
$Q double ts_atan2_f64(double y, double x) {
    if (y != y) return y;
    if (x != x) return x;
    double ay = fabs(y);
    double ax = fabs(x);
    int left = ts_em_sign_bit(x);
    double angle;
    if (ay == {INF}) {
        angle = ax != {INF} ? {PIO2_HI} : left ? {PI3O4} : {PIO4};
    } else if (ax == {INF} || ay == 0.0) {
        angle = left ? {PI_HI} : 0.0;
    } else if (ax == 0.0) {
        angle = {PIO2_HI};
    } else {
        angle = ts_em_atan2_upper(ay, x);
    }
    return ts_em_sign_bit(y) ? -angle : angle;
}
$Q double ts_min_f64(double a, double b) {
    return (a != a || b < a || (b == a && ts_em_sign_bit(b))) ? b : a;
}
$Q double ts_max_f64(double a, double b) {
    return (a != a || b > a || (b == a && ts_em_sign_bit(a))) ? b : a;
}
$Q float ts_exp_f32(float x) { return (float)ts_exp_f64((double)x); }
$Q float ts_log_f32(float x) { return (float)ts_log_f64((double)x); }
$Q float ts_pow_f32(float x, float y) { return (float)ts_pow_f64((double)x, (double)y); }
$Q float ts_sin_f32(float x) { return (float)ts_sin_f64((double)x); }
$Q float ts_cos_f32(float x) { return (float)ts_cos_f64((double)x); }
$Q float ts_atan2_f32(float y, float x) { return (float)ts_atan2_f64((double)y, (double)x); }
$Q float ts_min_f32(float a, float b) { return (float)ts_min_f64((double)a, (double)b); }
$Q float ts_max_f32(float a, float b) { return (float)ts_max_f64((double)a, (double)b); }
