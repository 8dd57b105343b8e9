#version 450
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x = 192) in;
layout(std430, set = 0, binding = 0) readonly buffer BI { uint d[]; } gin;
layout(std430, set = 0, binding = 1) readonly buffer BL0 { uint d[]; } li0;
layout(std430, set = 0, binding = 2) readonly buffer BL1 { uint d[]; } li1;
layout(std430, set = 0, binding = 3) readonly buffer BL2 { uint d[]; } li2;
layout(std430, set = 0, binding = 4) readonly buffer BL3 { uint d[]; } li3;
layout(std430, set = 0, binding = 5) readonly buffer BL4 { uint d[]; } li4;
layout(std430, set = 0, binding = 6) buffer BO0 { uint d[]; } lo0;
layout(std430, set = 0, binding = 7) buffer BO1 { uint d[]; } lo1;
layout(std430, set = 0, binding = 8) buffer BO2 { uint d[]; } lo2;
layout(std430, set = 0, binding = 9) buffer BO3 { uint d[]; } lo3;
layout(std430, set = 0, binding = 10) buffer BO4 { uint d[]; } lo4;
layout(push_constant) uniform PC { int mode; int s; } pc;
shared uint sm[2640];
uint sm_ld(int i) { return uint(i) < 2640u ? sm[i] : 0xffffffffu; }
void sm_st(int i, uint v) { if (uint(i) < 2640u) sm[i] = v; }

float jx_max(float a, float b) { return isnan(a) ? a : isnan(b) ? b : max(a, b); }
float jx_min(float a, float b) { return isnan(a) ? a : isnan(b) ? b : min(a, b); }
int jx_max(int a, int b) { return max(a, b); }
int jx_min(int a, int b) { return min(a, b); }
int jx_f2i(float v) { return isnan(v) ? 0 : v >= 2147483647.0 ? 2147483647 : v <= -2147483648.0 ? int(0x80000000u) : int(v); }
float jx_powf(float a, float b) {
  if (b == 0.0 || a == 1.0) return 1.0;
  if (isnan(a) || isnan(b)) return uintBitsToFloat(0x7fc00000u);
  if (a > 0.0) return pow(a, b);
  bool bint = floor(b) == b;
  bool odd = bint && abs(b) < 16777216.0 && mod(b, 2.0) == 1.0;
  if (a == 0.0) return b > 0.0 ? 0.0 : uintBitsToFloat(0x7f800000u);
  if (!bint) return uintBitsToFloat(0x7fc00000u);
  float r = pow(-a, b);
  return odd ? -r : r;
}
float jx_log1pf(float x) { precise float u = 1.0 + x; precise float d = u - 1.0; return u == 1.0 ? x : log(u) * (x / d); }

double jx_max(double a, double b) { return isnan(a) ? a : isnan(b) ? b : max(a, b); }
double jx_min(double a, double b) { return isnan(a) ? a : isnan(b) ? b : min(a, b); }
int jx_f2i(double v) { return isnan(v) ? 0 : v >= 2147483647.0LF ? 2147483647 : v <= -2147483648.0LF ? int(0x80000000u) : int(v); }

#define JX_INF packDouble2x32(uvec2(0u, 0x7ff00000u))
#define JX_NAN packDouble2x32(uvec2(0u, 0x7ff80000u))
double jx_exp_d(double x) {
  if (isnan(x)) return x;
  if (x > 709.782712893384LF) return JX_INF;
  if (x < -745.1332191019412LF) return 0.0LF;
  double n = floor(x * 1.4426950408889634LF + 0.5LF);
  precise double r = (x - n * 0.6931471803691238LF) - n * 1.9082149292705877e-10LF;
  double p = 1.0LF / 6227020800.0LF;
  p = p * r + 1.0LF / 479001600.0LF; p = p * r + 1.0LF / 39916800.0LF; p = p * r + 1.0LF / 3628800.0LF;
  p = p * r + 1.0LF / 362880.0LF; p = p * r + 1.0LF / 40320.0LF; p = p * r + 1.0LF / 5040.0LF;
  p = p * r + 1.0LF / 720.0LF; p = p * r + 1.0LF / 120.0LF; p = p * r + 1.0LF / 24.0LF;
  p = p * r + 1.0LF / 6.0LF; p = p * r + 0.5LF; p = p * r + 1.0LF; p = p * r + 1.0LF;
  int ni = int(n);
  return ldexp(ldexp(p, ni / 2), ni - ni / 2);
}
double jx_log_d(double x) {
  if (isnan(x) || x < 0.0LF) return JX_NAN;
  if (x == 0.0LF) return -JX_INF;
  if (isinf(x)) return x;
  int e;
  double m = frexp(x, e);
  if (m < 0.7071067811865476LF) { m *= 2.0LF; e -= 1; }
  double s = (m - 1.0LF) / (m + 1.0LF), s2 = s * s;
  double p = 1.0LF / 25.0LF;  // sum_k s2^k / (2k + 1): constant quotients, folded by glslang
  p = p * s2 + 1.0LF / 23.0LF; p = p * s2 + 1.0LF / 21.0LF; p = p * s2 + 1.0LF / 19.0LF;
  p = p * s2 + 1.0LF / 17.0LF; p = p * s2 + 1.0LF / 15.0LF; p = p * s2 + 1.0LF / 13.0LF;
  p = p * s2 + 1.0LF / 11.0LF; p = p * s2 + 1.0LF / 9.0LF; p = p * s2 + 1.0LF / 7.0LF;
  p = p * s2 + 1.0LF / 5.0LF; p = p * s2 + 1.0LF / 3.0LF;
  p = p * s2 + 1.0LF;
  double de = double(e);
  return de * 0.6931471803691238LF + (de * 1.9082149292705877e-10LF + 2.0LF * s * p);
}
double jx_log1p_d(double x) {
  if (abs(x) < 1e-4LF) return x * (1.0LF - x * (0.5LF - x * (1.0LF / 3.0LF - x * 0.25LF)));
  precise double u = 1.0LF + x;
  if (isinf(u)) return u;
  precise double c = (u - 1.0LF) - x;  // rounding error of u; `precise` forbids reassociating it away
  return jx_log_d(u) - c / u;
}
// sin and cos of r in [-pi/4, pi/4]
double jx_sinp(double r) {  // r + r^3 * sum_k (-1)^k r^(2k-2) / (2k+1)!, k = 1..10
  double r2 = r * r, p = 1.0LF / 51090942171709440000.0LF;
  p = p * r2 - 1.0LF / 121645100408832000.0LF; p = p * r2 + 1.0LF / 355687428096000.0LF;
  p = p * r2 - 1.0LF / 1307674368000.0LF; p = p * r2 + 1.0LF / 6227020800.0LF; p = p * r2 - 1.0LF / 39916800.0LF;
  p = p * r2 + 1.0LF / 362880.0LF; p = p * r2 - 1.0LF / 5040.0LF; p = p * r2 + 1.0LF / 120.0LF;
  p = p * r2 - 1.0LF / 6.0LF;
  return r + r * r2 * p;
}
double jx_cosp(double r) {
  double r2 = r * r, p = 1.0LF / 2432902008176640000.0LF;
  p = p * r2 - 1.0LF / 6402373705728000.0LF; p = p * r2 + 1.0LF / 20922789888000.0LF;
  p = p * r2 - 1.0LF / 87178291200.0LF; p = p * r2 + 1.0LF / 479001600.0LF; p = p * r2 - 1.0LF / 3628800.0LF;
  p = p * r2 + 1.0LF / 40320.0LF; p = p * r2 - 1.0LF / 720.0LF; p = p * r2 + 1.0LF / 24.0LF; p = p * r2 - 0.5LF;
  return 1.0LF + r2 * p;
}
double jx_sincos_d(double x, int want_cos) {
  if (isnan(x) || isinf(x)) return JX_NAN;
  double k = floor(x * 0.6366197723675814LF + 0.5LF);
  precise double r = ((x - k * 1.57079632673412561417LF) - k * 6.07710050630396597660e-11LF) - k * 2.02226624871116645580e-21LF;
  int q = (int(mod(k, 4.0LF)) + want_cos) & 3;
  if (q == 0) return jx_sinp(r);
  if (q == 1) return jx_cosp(r);
  if (q == 2) return -jx_sinp(r);
  return -jx_cosp(r);
}
double jx_tanh_d(double x) {
  double a = abs(x);
  if (isnan(x)) return x;
  if (a > 22.0LF) return sign(x);
  if (a < 0.1LF) {
    double x2 = x * x;
    return x * (1.0LF + x2 * (-1.0LF / 3.0LF + x2 * (2.0LF / 15.0LF + x2 * (-17.0LF / 315.0LF + x2 * (62.0LF / 2835.0LF + x2 * (-1382.0LF / 155925.0LF))))));
  }
  double e = jx_exp_d(-2.0LF * a);
  return sign(x) * (1.0LF - e) / (1.0LF + e);
}
double jx_pow_d(double a, double b) {
  if (b == 0.0LF || a == 1.0LF) return 1.0LF;
  if (isnan(a) || isnan(b)) return JX_NAN;
  bool bint = floor(b) == b;
  bool odd = bint && abs(b) < 9007199254740992.0LF && mod(b, 2.0LF) == 1.0LF;
  if (a == 0.0LF) return b > 0.0LF ? (odd ? a : 0.0LF) : (odd && sign(1.0LF / a) < 0.0LF ? -JX_INF : JX_INF);
  if (a < 0.0LF) {
    if (!bint) return JX_NAN;
    double r = jx_exp_d(b * jx_log_d(-a));
    return odd ? -r : r;
  }
  return jx_exp_d(b * jx_log_d(a));
}
void load_(int lid, int side, int i) {
if (side == 0) {
if (lid < 169) {
const int e = lid;
float v_;
if (pc.mode == 2) {
v_ = uintBitsToFloat(li0.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
} else {
v_ = uintBitsToFloat(lo0.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
}
sm_st(52 + (e), floatBitsToUint(v_));
if (pc.mode == 2) {
lo0.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)] = floatBitsToUint(v_);
}
}
} else {
if (lid < 169) {
const int e = lid;
float v_;
if (pc.mode == 2) {
v_ = uintBitsToFloat(li0.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
} else {
v_ = uintBitsToFloat(lo0.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
}
sm_st(559 + (e), floatBitsToUint(v_));
}
}
if (side == 0) {
if (lid < 13) {
const int e = lid;
float v_;
if (pc.mode == 2) {
v_ = uintBitsToFloat(li1.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)]);
} else {
v_ = uintBitsToFloat(lo1.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)]);
}
sm_st(0 + (e), floatBitsToUint(v_));
if (pc.mode == 2) {
lo1.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)] = floatBitsToUint(v_);
}
}
} else {
if (lid < 13) {
const int e = lid;
float v_;
if (pc.mode == 2) {
v_ = uintBitsToFloat(li1.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)]);
} else {
v_ = uintBitsToFloat(lo1.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)]);
}
sm_st(26 + (e), floatBitsToUint(v_));
}
}
if (side == 0) {
if (lid < 169) {
const int e = lid;
float v_;
if (pc.mode == 2) {
v_ = uintBitsToFloat(li2.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
} else {
v_ = uintBitsToFloat(lo2.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
}
sm_st(221 + (e), floatBitsToUint(v_));
if (pc.mode == 2) {
lo2.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)] = floatBitsToUint(v_);
}
}
} else {
if (lid < 169) {
const int e = lid;
float v_;
if (pc.mode == 2) {
v_ = uintBitsToFloat(li2.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
} else {
v_ = uintBitsToFloat(lo2.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
}
sm_st(728 + (e), floatBitsToUint(v_));
}
}
if (side == 0) {
if (lid < 13) {
const int e = lid;
float v_;
if (pc.mode == 2) {
v_ = uintBitsToFloat(li3.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)]);
} else {
v_ = uintBitsToFloat(lo3.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)]);
}
sm_st(13 + (e), floatBitsToUint(v_));
if (pc.mode == 2) {
lo3.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)] = floatBitsToUint(v_);
}
}
} else {
if (lid < 13) {
const int e = lid;
float v_;
if (pc.mode == 2) {
v_ = uintBitsToFloat(li3.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)]);
} else {
v_ = uintBitsToFloat(lo3.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)]);
}
sm_st(39 + (e), floatBitsToUint(v_));
}
}
if (side == 0) {
if (lid < 169) {
const int e = lid;
float v_;
if (pc.mode == 2) {
v_ = uintBitsToFloat(li4.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
} else {
v_ = uintBitsToFloat(lo4.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
}
sm_st(390 + (e), floatBitsToUint(v_));
if (pc.mode == 2) {
lo4.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)] = floatBitsToUint(v_);
}
}
} else {
if (lid < 169) {
const int e = lid;
float v_;
if (pc.mode == 2) {
v_ = uintBitsToFloat(li4.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
} else {
v_ = uintBitsToFloat(lo4.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
}
sm_st(897 + (e), floatBitsToUint(v_));
}
}
}
void combine_(int lid) {
int pf12_[13];
{
if (lid < 169) {
const int e = lid;
  int r_ = e;
  const int i2 = r_ % 13;
  r_ /= 13;
  const int i1 = r_ % 13;
  r_ /= 13;
  const int i0 = r_ % 1;
  float acc = float(0);
  [[unroll]] for (int i3 = 0; i3 < 13; ++i3) {
    const float v0 = uintBitsToFloat(sm_ld(221 + (0 + 13*i1 + 1*i3)));
    const float v1 = uintBitsToFloat(sm_ld(897 + (0 + 1*i2 + 13*i3)));
    const float v2 = float(v0 * v1);
    acc += float(v2);
  }
  const int v3 = int(i2);
  const int v4 = int(i1);
  const int v5 = int(v3 - v4);
  const int v6 = int(0u);
  const bool v7 = bool((v5 == v6));
  const float v8 = float(float(v7));
  const float v9 = float(acc);
  const float v10 = float(v8 + v9);
sm_st(1119 + (e), floatBitsToUint(v10));
}
}
{
if (lid >= 169 && lid < 182) {
const int e = lid - 169;
  int r_ = e;
  const int i1 = r_ % 13;
  r_ /= 13;
  const int i0 = r_ % 1;
  float acc = float(0);
  [[unroll]] for (int i2 = 0; i2 < 13; ++i2) {
    const float v0 = uintBitsToFloat(sm_ld(221 + (0 + 13*i1 + 1*i2)));
    const float v1 = uintBitsToFloat(sm_ld(39 + (0 + 1*i2)));
    const float v2 = float(v0 * v1);
    acc += float(v2);
  }
  const float v3 = uintBitsToFloat(sm_ld(0 + (0 + 13*i0 + 1*i1)));
  const float v4 = float(acc);
  const float v5 = float(v3 + v4);
sm_st(1067 + (e), floatBitsToUint(v5));
}
}
{
if (lid < 13) {
const int e = lid;
  int r_ = e;
  const int i1 = r_ % 13;
  r_ /= 13;
  const int i0 = r_ % 1;
  float acc = float(0);
  [[unroll]] for (int i2 = 0; i2 < 13; ++i2) {
    const float v0 = uintBitsToFloat(sm_ld(897 + (0 + 13*i1 + 1*i2)));
    const float v1 = uintBitsToFloat(sm_ld(0 + (0 + 1*i2)));
    const float v2 = float(v0 * v1);
    acc += float(v2);
  }
  const float v3 = uintBitsToFloat(sm_ld(39 + (0 + 13*i0 + 1*i1)));
  const float v4 = float(acc);
  const float v5 = float(v3 - v4);
sm_st(1080 + (e), floatBitsToUint(v5));
}
}
barrier();
{
for (int mat_ = 0; mat_ < 1; ++mat_) {
const int ma_ = mat_ * 169;
float det_ = float(1);
for (int q_ = 0; q_ < 13; ++q_) pf12_[q_] = q_;
const int t0_ = lid + 0, r0_ = t0_ / 13, j0_ = t0_ % 13;
int ps0_ = r0_;
float x0_ = float(0);
if (t0_ < 169) x0_ = uintBitsToFloat(sm_ld(1119 + (ma_ + t0_)));
{
const int k_ = 0;
  int v_ = k_;
  float b_ = abs(uintBitsToFloat(sm_ld(1119 + (ma_ + (pf12_[k_]) * 13 + (k_)))));
  [[unroll]] for (int i_ = 1; i_ < 13; ++i_) {
    const float a_ = abs(uintBitsToFloat(sm_ld(1119 + (ma_ + (pf12_[i_]) * 13 + (k_)))));
    if (i_ > k_ && a_ > b_) {
      b_ = a_;
      v_ = i_;
    }
  }
  if (v_ != k_) {
    int w_ = pf12_[k_]; pf12_[k_] = pf12_[v_]; pf12_[v_] = w_;
    det_ = -det_;
  }
  const int pr_ = pf12_[k_];
  const float d_ = uintBitsToFloat(sm_ld(1119 + (ma_ + (pr_) * 13 + (k_))));
  if (t0_ < 169) {
  ps0_ = ps0_ == k_ ? v_ : ps0_ == v_ ? k_ : ps0_;
  if (ps0_ > k_ && j0_ >= k_) {
    if (d_ != float(0)) x0_ = j0_ == k_ ? x0_ / d_ : x0_ - (uintBitsToFloat(sm_ld(1119 + (ma_ + (r0_) * 13 + (k_)))) / d_) * uintBitsToFloat(sm_ld(1119 + (ma_ + (pr_) * 13 + (j0_))));
    if (j0_ > k_) sm_st(1457 + (ma_ + (r0_) * 13 + (j0_)), floatBitsToUint(x0_));
  }
  }
}
barrier();
[[unroll]] for (int k_ = 1; k_ < 12; ++k_) {
  int v_ = k_;
  float b_ = abs(uintBitsToFloat(sm_ld(1457 + (ma_ + (pf12_[k_]) * 13 + (k_)))));
  [[unroll]] for (int i_ = 1; i_ < 13; ++i_) {
    const float a_ = abs(uintBitsToFloat(sm_ld(1457 + (ma_ + (pf12_[i_]) * 13 + (k_)))));
    if (i_ > k_ && a_ > b_) {
      b_ = a_;
      v_ = i_;
    }
  }
  if (v_ != k_) {
    int w_ = pf12_[k_]; pf12_[k_] = pf12_[v_]; pf12_[v_] = w_;
    det_ = -det_;
  }
  const int pr_ = pf12_[k_];
  const float d_ = uintBitsToFloat(sm_ld(1457 + (ma_ + (pr_) * 13 + (k_))));
  if (t0_ < 169) {
  ps0_ = ps0_ == k_ ? v_ : ps0_ == v_ ? k_ : ps0_;
  if (ps0_ > k_ && j0_ >= k_) {
    if (d_ != float(0)) x0_ = j0_ == k_ ? x0_ / d_ : x0_ - (uintBitsToFloat(sm_ld(1457 + (ma_ + (r0_) * 13 + (k_)))) / d_) * uintBitsToFloat(sm_ld(1457 + (ma_ + (pr_) * 13 + (j0_))));
    if (j0_ > k_) sm_st(1457 + (ma_ + (r0_) * 13 + (j0_)), floatBitsToUint(x0_));
  }
  }
if (k_ == 11) {
if (t0_ < 169) sm_st(1288 + (ma_ + (ps0_) * 13 + (j0_)), floatBitsToUint(x0_));
}
barrier();
}
if (lid == 0) {
sm_st(1066 + (mat_), floatBitsToUint(det_));
}
}
}
{
for (int t_ = lid; t_ < 13; t_ += 192) {
const int m_ = t_ / 13, c_ = t_ % 13;
const int ma_ = m_ * 169;
const int mb_ = m_ * 169;
  float x_[13];
  [[unroll]] for (int s_ = 0; s_ < 13; ++s_) {
    const int i_ = s_;
    float v_ = pf12_[i_] == c_ ? float(1) : float(0);
    [[unroll]] for (int j_ = 0; j_ < i_; ++j_) v_ -= float(uintBitsToFloat(sm_ld(1288 + (ma_ + (i_) * 13 + (j_))))) * float(x_[j_]);
    x_[i_] = float(v_);
  }
  [[unroll]] for (int s_ = 0; s_ < 13; ++s_) sm_st(1795 + (mb_ + (s_) * 13 + c_), floatBitsToUint(x_[s_]));
}
}
{
for (int t_ = lid; t_ < 13; t_ += 192) {
const int m_ = t_ / 13, c_ = t_ % 13;
const int ma_ = m_ * 169;
const int mb_ = m_ * 169;
  float x_[13];
  [[unroll]] for (int s_ = 0; s_ < 13; ++s_) {
    const int i_ = 12 - s_;
    float v_ = float(uintBitsToFloat(sm_ld(1795 + (mb_ + (i_) * 13 + c_))));
    [[unroll]] for (int j_ = i_ + 1; j_ < 13; ++j_) v_ -= float(uintBitsToFloat(sm_ld(1288 + (ma_ + (i_) * 13 + (j_))))) * float(x_[j_]);
    v_ /= float(uintBitsToFloat(sm_ld(1288 + (ma_ + (i_) * 13 + (i_)))));
    x_[i_] = float(v_);
  }
  [[unroll]] for (int s_ = 0; s_ < 13; ++s_) sm_st(1964 + (mb_ + (s_) * 13 + c_), floatBitsToUint(x_[s_]));
}
}
barrier();
{
if (lid < 169) {
const int e = lid;
  int r_ = e;
  const int i2 = r_ % 13;
  r_ /= 13;
  const int i1 = r_ % 13;
  r_ /= 13;
  const int i0 = r_ % 1;
  float acc = float(0);
  [[unroll]] for (int i3 = 0; i3 < 13; ++i3) {
    const float v0 = uintBitsToFloat(sm_ld(559 + (0 + 13*i1 + 1*i3)));
    const float v1 = uintBitsToFloat(sm_ld(1964 + (0 + 1*i2 + 13*i3)));
    const float v2 = float(v0 * v1);
    acc += float(v2);
  }
sm_st(1119 + (e), floatBitsToUint(float(acc)));
}
}
{
if (lid < 169) {
const int e = lid;
  int r_ = e;
  const int i2 = r_ % 13;
  r_ /= 13;
  const int i1 = r_ % 13;
  r_ /= 13;
  const int i0 = r_ % 1;
  float acc = float(0);
  [[unroll]] for (int i3 = 0; i3 < 13; ++i3) {
    const float v0 = uintBitsToFloat(sm_ld(1964 + (0 + 13*i1 + 1*i3)));
    const float v1 = uintBitsToFloat(sm_ld(52 + (0 + 1*i2 + 13*i3)));
    const float v2 = float(v0 * v1);
    acc += float(v2);
  }
sm_st(1288 + (e), floatBitsToUint(float(acc)));
}
}
barrier();
{
if (lid < 169) {
const int e = lid;
  int r_ = e;
  const int i2 = r_ % 13;
  r_ /= 13;
  const int i1 = r_ % 13;
  r_ /= 13;
  const int i0 = r_ % 1;
  float acc = float(0);
  [[unroll]] for (int i3 = 0; i3 < 13; ++i3) {
    const float v0 = uintBitsToFloat(sm_ld(1119 + (0 + 13*i1 + 1*i3)));
    const float v1 = uintBitsToFloat(sm_ld(221 + (0 + 1*i2 + 13*i3)));
    const float v2 = float(v0 * v1);
    acc += float(v2);
  }
sm_st(1457 + (e), floatBitsToUint(float(acc)));
}
}
{
if (lid < 169) {
const int e = lid;
  int r_ = e;
  const int i2 = r_ % 13;
  r_ /= 13;
  const int i1 = r_ % 13;
  r_ /= 13;
  const int i0 = r_ % 1;
  float acc = float(0);
  [[unroll]] for (int i3 = 0; i3 < 13; ++i3) {
    const float v0 = uintBitsToFloat(sm_ld(1288 + (0 + 1*i1 + 13*i3)));
    const float v1 = uintBitsToFloat(sm_ld(897 + (0 + 1*i2 + 13*i3)));
    const float v2 = float(v0 * v1);
    acc += float(v2);
  }
sm_st(1626 + (e), floatBitsToUint(float(acc)));
}
}
{
if (lid < 169) {
const int e = lid;
  int r_ = e;
  const int i2 = r_ % 13;
  r_ /= 13;
  const int i1 = r_ % 13;
  r_ /= 13;
  const int i0 = r_ % 1;
  float acc = float(0);
  [[unroll]] for (int i3 = 0; i3 < 13; ++i3) {
    const float v0 = uintBitsToFloat(sm_ld(1119 + (0 + 13*i1 + 1*i3)));
    const float v1 = uintBitsToFloat(sm_ld(52 + (0 + 1*i2 + 13*i3)));
    const float v2 = float(v0 * v1);
    acc += float(v2);
  }
sm_st(2133 + (e), floatBitsToUint(float(acc)));
}
}
{
if (lid >= 169 && lid < 182) {
const int e = lid - 169;
  int r_ = e;
  const int i1 = r_ % 13;
  r_ /= 13;
  const int i0 = r_ % 1;
  float acc = float(0);
  [[unroll]] for (int i2 = 0; i2 < 13; ++i2) {
    const float v0 = uintBitsToFloat(sm_ld(1119 + (0 + 13*i1 + 1*i2)));
    const float v1 = uintBitsToFloat(sm_ld(1067 + (0 + 1*i2)));
    const float v2 = float(v0 * v1);
    acc += float(v2);
  }
  const float v3 = float(acc);
  const float v4 = uintBitsToFloat(sm_ld(26 + (0 + 13*i0 + 1*i1)));
  const float v5 = float(v3 + v4);
sm_st(1093 + (e), floatBitsToUint(v5));
}
}
{
if (lid < 13) {
const int e = lid;
  int r_ = e;
  const int i1 = r_ % 13;
  r_ /= 13;
  const int i0 = r_ % 1;
  float acc = float(0);
  [[unroll]] for (int i2 = 0; i2 < 13; ++i2) {
    const float v0 = uintBitsToFloat(sm_ld(1288 + (0 + 1*i1 + 13*i2)));
    const float v1 = uintBitsToFloat(sm_ld(1080 + (0 + 1*i2)));
    const float v2 = float(v0 * v1);
    acc += float(v2);
  }
  const float v3 = float(acc);
  const float v4 = uintBitsToFloat(sm_ld(13 + (0 + 13*i0 + 1*i1)));
  const float v5 = float(v3 + v4);
sm_st(1106 + (e), floatBitsToUint(v5));
}
}
barrier();
{
if (lid < 169) {
const int e = lid;
  int r_ = e;
  const int i2 = r_ % 13;
  r_ /= 13;
  const int i1 = r_ % 13;
  r_ /= 13;
  const int i0 = r_ % 1;
  float acc = float(0);
  [[unroll]] for (int i3 = 0; i3 < 13; ++i3) {
    const float v0 = uintBitsToFloat(sm_ld(1457 + (0 + 13*i1 + 1*i3)));
    const float v1 = uintBitsToFloat(sm_ld(559 + (0 + 13*i2 + 1*i3)));
    const float v2 = float(v0 * v1);
    acc += float(v2);
  }
  const float v3 = float(acc);
  const float v4 = uintBitsToFloat(sm_ld(728 + (0 + 169*i0 + 13*i1 + 1*i2)));
  const float v5 = float(v3 + v4);
sm_st(2302 + (e), floatBitsToUint(v5));
}
}
{
if (lid < 169) {
const int e = lid;
  int r_ = e;
  const int i2 = r_ % 13;
  r_ /= 13;
  const int i1 = r_ % 13;
  r_ /= 13;
  const int i0 = r_ % 1;
  float acc = float(0);
  [[unroll]] for (int i3 = 0; i3 < 13; ++i3) {
    const float v0 = uintBitsToFloat(sm_ld(1626 + (0 + 13*i1 + 1*i3)));
    const float v1 = uintBitsToFloat(sm_ld(52 + (0 + 1*i2 + 13*i3)));
    const float v2 = float(v0 * v1);
    acc += float(v2);
  }
  const float v3 = float(acc);
  const float v4 = uintBitsToFloat(sm_ld(390 + (0 + 169*i0 + 13*i1 + 1*i2)));
  const float v5 = float(v3 + v4);
sm_st(2471 + (e), floatBitsToUint(v5));
}
}
}
void commit_(int lid, int i, bool keep) {
if (lid < 169) {
const int e = lid;
float v_ = uintBitsToFloat(sm_ld(2133 + (e)));
lo0.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)] = floatBitsToUint(v_);
if (keep) {
sm_st(52 + (e), floatBitsToUint(v_));
}
}
if (lid < 13) {
const int e = lid;
float v_ = uintBitsToFloat(sm_ld(1093 + (e)));
lo1.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)] = floatBitsToUint(v_);
if (keep) {
sm_st(0 + (e), floatBitsToUint(v_));
}
}
if (lid < 169) {
const int e = lid;
float v_ = uintBitsToFloat(sm_ld(2302 + (e)));
lo2.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)] = floatBitsToUint(v_);
if (keep) {
sm_st(221 + (e), floatBitsToUint(v_));
}
}
if (lid < 13) {
const int e = lid;
float v_ = uintBitsToFloat(sm_ld(1106 + (e)));
lo3.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)] = floatBitsToUint(v_);
if (keep) {
sm_st(13 + (e), floatBitsToUint(v_));
}
}
if (lid < 169) {
const int e = lid;
float v_ = uintBitsToFloat(sm_ld(2471 + (e)));
lo4.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)] = floatBitsToUint(v_);
if (keep) {
sm_st(390 + (e), floatBitsToUint(v_));
}
}
}
float nx0_0_[1];
float nx0_1_[1];
float nx0_2_[1];
float nx0_3_[1];
float nx0_4_[1];
float nx1_0_[1];
float nx1_1_[1];
float nx1_2_[1];
float nx1_3_[1];
float nx1_4_[1];
void fetch0_(int lid, int i) {
{
const int e = lid + 0;
if (e < 169) if (pc.mode == 2) {
nx0_0_[0] = uintBitsToFloat(li0.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
} else {
nx0_0_[0] = uintBitsToFloat(lo0.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
}
}
{
const int e = lid + 0;
if (e < 13) if (pc.mode == 2) {
nx0_1_[0] = uintBitsToFloat(li1.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)]);
} else {
nx0_1_[0] = uintBitsToFloat(lo1.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)]);
}
}
{
const int e = lid + 0;
if (e < 169) if (pc.mode == 2) {
nx0_2_[0] = uintBitsToFloat(li2.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
} else {
nx0_2_[0] = uintBitsToFloat(lo2.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
}
}
{
const int e = lid + 0;
if (e < 13) if (pc.mode == 2) {
nx0_3_[0] = uintBitsToFloat(li3.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)]);
} else {
nx0_3_[0] = uintBitsToFloat(lo3.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)]);
}
}
{
const int e = lid + 0;
if (e < 169) if (pc.mode == 2) {
nx0_4_[0] = uintBitsToFloat(li4.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
} else {
nx0_4_[0] = uintBitsToFloat(lo4.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
}
}
}
void stash0_(int lid) {
{
const int e = lid + 0;
if (e < 169) {
sm_st(52 + (e), floatBitsToUint(nx0_0_[0]));
}
}
{
const int e = lid + 0;
if (e < 13) {
sm_st(0 + (e), floatBitsToUint(nx0_1_[0]));
}
}
{
const int e = lid + 0;
if (e < 169) {
sm_st(221 + (e), floatBitsToUint(nx0_2_[0]));
}
}
{
const int e = lid + 0;
if (e < 13) {
sm_st(13 + (e), floatBitsToUint(nx0_3_[0]));
}
}
{
const int e = lid + 0;
if (e < 169) {
sm_st(390 + (e), floatBitsToUint(nx0_4_[0]));
}
}
}
void fetch1_(int lid, int i) {
{
const int e = lid + 0;
if (e < 169) if (pc.mode == 2) {
nx1_0_[0] = uintBitsToFloat(li0.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
} else {
nx1_0_[0] = uintBitsToFloat(lo0.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
}
}
{
const int e = lid + 0;
if (e < 13) if (pc.mode == 2) {
nx1_1_[0] = uintBitsToFloat(li1.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)]);
} else {
nx1_1_[0] = uintBitsToFloat(lo1.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)]);
}
}
{
const int e = lid + 0;
if (e < 169) if (pc.mode == 2) {
nx1_2_[0] = uintBitsToFloat(li2.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
} else {
nx1_2_[0] = uintBitsToFloat(lo2.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
}
}
{
const int e = lid + 0;
if (e < 13) if (pc.mode == 2) {
nx1_3_[0] = uintBitsToFloat(li3.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)]);
} else {
nx1_3_[0] = uintBitsToFloat(lo3.d[0 + ((((e) / 13) * 102400 + (i)) * 13 + (e) % 13)]);
}
}
{
const int e = lid + 0;
if (e < 169) if (pc.mode == 2) {
nx1_4_[0] = uintBitsToFloat(li4.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
} else {
nx1_4_[0] = uintBitsToFloat(lo4.d[0 + ((((e) / 169) * 102400 + (i)) * 169 + (e) % 169)]);
}
}
}
void stash1_(int lid) {
{
const int e = lid + 0;
if (e < 169) {
sm_st(559 + (e), floatBitsToUint(nx1_0_[0]));
}
}
{
const int e = lid + 0;
if (e < 13) {
sm_st(26 + (e), floatBitsToUint(nx1_1_[0]));
}
}
{
const int e = lid + 0;
if (e < 169) {
sm_st(728 + (e), floatBitsToUint(nx1_2_[0]));
}
}
{
const int e = lid + 0;
if (e < 13) {
sm_st(39 + (e), floatBitsToUint(nx1_3_[0]));
}
}
{
const int e = lid + 0;
if (e < 169) {
sm_st(897 + (e), floatBitsToUint(nx1_4_[0]));
}
}
}
int fix_next_(int p, int G, int count, int S) {
for (; p < count; p += G) {
const int j = pc.s * p + pc.s - 1;
if (j >= S && (j + 1) % S != 0) break;
}
return p;
}
void main() {
const int lid = int(gl_LocalInvocationIndex);
const int G = int(gl_NumWorkGroups.x), g0 = int(gl_WorkGroupID.x);
const int count = 102400 / pc.s, S = pc.s * 8;
if (pc.mode != 1) {
for (int g = g0; g < (count + 8 - 1) / 8; g += G) {
const int p0 = g * 8;
load_(lid, 0, (pc.s * (p0) + pc.s - 1));
if (p0 + 1 < count) fetch1_(lid, (pc.s * (p0 + 1) + pc.s - 1));
for (int c = 1; c < 8 && p0 + c < count; ++c) {
const int i = (pc.s * (p0 + c) + pc.s - 1);
stash1_(lid);
barrier();
if (c + 1 < 8 && p0 + c + 1 < count) fetch1_(lid, (pc.s * (p0 + c + 1) + pc.s - 1));
combine_(lid);
barrier();
commit_(lid, i, true);
barrier();
}
}
} else {
int p = fix_next_(g0, G, count, S);
if (p < count) {
fetch0_(lid, (((pc.s * (p) + pc.s - 1) / S) * S - 1));
fetch1_(lid, ((pc.s * (p) + pc.s - 1)));
}
while (p < count) {
const int j = pc.s * p + pc.s - 1;
stash0_(lid);
stash1_(lid);
barrier();
const int pn = fix_next_(p + G, G, count, S);
if (pn < count) {
fetch0_(lid, (((pc.s * (pn) + pc.s - 1) / S) * S - 1));
fetch1_(lid, ((pc.s * (pn) + pc.s - 1)));
}
combine_(lid);
barrier();
commit_(lid, (j), false);
barrier();
p = pn;
}
}
}

