#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer B { float d[]; } b;
shared float s[64];
void main() {
  uint i = gl_LocalInvocationIndex;
  s[i] = b.d[i] * 2.0;
  barrier();
  float acc = 0.0;
  for (int k = 0; k < 13; ++k) acc += s[(i + k) % 64] * float(k);
  b.d[i] = acc;
}
