#!/usr/bin/env python3
"""Issue 4's ratios from jhdnn-bench CSV files: per solver, the geometric mean over the ResNet-50
and VGG-16 layers (f32, NCHW) of cuDNN's same-algorithm time / ours (the ratio_same column).

  jhdnn-bench --suite=resnet50 --cfg=f32:nchw --algo=implicit_precomp_gemm,implicit_gemm --cudnn=same --csv=rn50.csv
  jhdnn-bench --suite=vgg16 --cfg=f32:nchw --algo=implicit_precomp_gemm,implicit_gemm --cudnn=same --csv=vgg.csv
  python3 bench/igemm_csv_geomean.py rn50.csv vgg.csv      (bench/results/bench.csv at 217cfa8: 1.066, 1.207;
                                                           at b6a93eb it gave 0.798, 1.211)
"""
import csv, math, sys
for s, algo in (('implicit_precomp_gemm', 'IMPLICIT_PRECOMP_GEMM'), ('implicit_gemm', 'IMPLICIT_GEMM')):
    r = [x for f in sys.argv[1:] for x in csv.DictReader(l for l in open(f) if not l.startswith('#'))
         if x['impl'] == 'jhdnn' and x['solver'] == s and x['algo'] == algo and x['dt'] == 'f32'
         and x['layout'] == 'nchw' and x['status'] == 'SUCCESS' and x['problem'].startswith(('rn50', 'vgg'))]
    v = [float(x['ratio_same']) for x in r]
    print(s, len(v), 'layers, geomean cuDNN %s time / ours: %.3f' % (algo, math.exp(sum(map(math.log, v)) / len(v))))
