// The producer's walk over one tile's reduction blocks in conv_wgmma.cu, as a host + device struct
// so that the CPU test (tests/test_wgmma_plan.cpp, "wgmma cursor: ...") checks it against the
// division formula it replaces.
//
// Reduction block kb of a tile is channel slice kb % cblocks of filter tap kb / cblocks, taps in
// (r, s) order, s fastest. For block kb the producer needs
//   c0   = (kb % cblocks) * kBK                         first channel of the slice,
//   xw   = xw0 + s * dil_w,  xh = xh0 + r * dil_h       the input box's w and h coordinates,
//   wtap = tap, or R*S-1-tap in CONVOLUTION mode         the filter tap (flipped: (R-1-r)*S + S-1-s),
// where xw0 / xh0 are the box coordinates of tap (0, 0). The division-per-block version cost the
// producer thread ~160 dependent instructions per block (README.md, "Round 5"); the cursor divides
// once per tile (start) and then only adds and compares (step).
#pragma once

#if defined(__CUDACC__)
#define JHDNN_CURSOR_FN __host__ __device__ __forceinline__
#else
#define JHDNN_CURSOR_FN inline
#endif

namespace jhdnn::conv::tensorcore {

struct ReductionCursor {
  // Where the producer is (block kb).
  int c0 = 0, xw = 0, xh = 0, wtap = 0;
  // How it steps.
  int s = 0, S = 1, kBK = 1, cend = 1, xw0 = 0, dil_w = 1, dil_h = 1, wstep = 1;

  // Positions the cursor at block kb0 (0 <= kb0 < cblocks * R * S).
  JHDNN_CURSOR_FN void start(int kb0, int kBK_, int cblocks, int R, int S_, int xw0_, int xh0, int dil_w_, int dil_h_,
                             bool flip) {
    kBK = kBK_, S = S_, xw0 = xw0_, dil_w = dil_w_, dil_h = dil_h_;
    cend = cblocks * kBK;
    const int tap = kb0 / cblocks, r = tap / S;
    s = tap - r * S;
    c0 = (kb0 - tap * cblocks) * kBK;
    xw = xw0 + s * dil_w;
    xh = xh0 + r * dil_h;
    wtap = flip ? R * S - 1 - tap : tap;
    wstep = flip ? -1 : 1;
  }

  // Block kb -> kb + 1: the next channel slice, else channel 0 of the next tap (the next filter
  // column, else column 0 of the next row). Past the last block the values are meaningless.
  JHDNN_CURSOR_FN void step() {
    c0 += kBK;
    if (c0 == cend) {
      c0 = 0, wtap += wstep, xw += dil_w;
      if (++s == S) s = 0, xw = xw0, xh += dil_h;
    }
  }
};

}  // namespace jhdnn::conv::tensorcore

#undef JHDNN_CURSOR_FN
