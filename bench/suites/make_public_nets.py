#!/usr/bin/env python3
"""Writes public-nets.txt: the forward convolution layers of eight public network definitions, one
jhdnn-bench problem string per line, identical shapes kept once (the first name wins).

  GoogLeNet / Inception-v1 (Szegedy et al. 2014, Table 1; both auxiliary heads), batch 32, 224x224
  ResNeXt-50 32x4d (Xie et al. 2017, Table 1; torchvision layout: stride on the grouped 3x3), batch 32
  DenseNet-121 (Huang et al. 2017, Table 1; growth 32, bottleneck 4*32), batch 16
  YOLOv3-416 (Redmon & Farhadi 2018: darknet-53 and the three detection heads, 255 outputs), batch 8
  U-Net (Ronneberger et al. 2015, Fig. 1: unpadded 3x3 convs, 572x572 input; the 2x2 up-convs are
  transposed convolutions and left out), batch 2
  SqueezeNet 1.0 (Iandola et al. 2016, Table 1), batch 32
  MobileNet v1 (Howard et al. 2017, Table 1; depthwise as groups = channels), batch 32
  AlexNet (torchvision's single-GPU variant of Krizhevsky et al. 2012), batch 32

Run from this folder: python3 make_public_nets.py  (the committed .txt is its output).
"""

layers = []  # (net, name, spec dict)


def conv(net, name, n, c, hw, k, f, s=1, p=None, g=1):
    if p is None:
        p = f // 2
    layers.append((net, name, dict(g=g, mb=n, ic=c, ih=hw, oc=k, kh=f, sh=s, ph=p)))


def out_size(hw, f, s, p):
    return (hw + 2 * p - f) // s + 1


def googlenet(n=32):
    net = "googlenet"
    conv(net, "conv1_7x7s2", n, 3, 224, 64, 7, 2, 3)
    conv(net, "conv2_reduce", n, 64, 56, 64, 1)
    conv(net, "conv2_3x3", n, 64, 56, 192, 3)
    mods = [("3a", 28, 192, 64, 96, 128, 16, 32, 32), ("3b", 28, 256, 128, 128, 192, 32, 96, 64),
            ("4a", 14, 480, 192, 96, 208, 16, 48, 64), ("4b", 14, 512, 160, 112, 224, 24, 64, 64),
            ("4c", 14, 512, 128, 128, 256, 24, 64, 64), ("4d", 14, 512, 112, 144, 288, 32, 64, 64),
            ("4e", 14, 528, 256, 160, 320, 32, 128, 128), ("5a", 7, 832, 256, 160, 320, 32, 128, 128),
            ("5b", 7, 832, 384, 192, 384, 48, 128, 128)]
    for m, hw, cin, c1, r3, c3, r5, c5, pp in mods:
        conv(net, f"inc{m}_1x1", n, cin, hw, c1, 1)
        conv(net, f"inc{m}_3x3red", n, cin, hw, r3, 1)
        conv(net, f"inc{m}_3x3", n, r3, hw, c3, 3)
        conv(net, f"inc{m}_5x5red", n, cin, hw, r5, 1)
        conv(net, f"inc{m}_5x5", n, r5, hw, c5, 5)
        conv(net, f"inc{m}_poolproj", n, cin, hw, pp, 1)
    conv(net, "aux1_1x1", n, 512, 4, 128, 1)
    conv(net, "aux2_1x1", n, 528, 4, 128, 1)


def resnext50(n=32):
    net = "resnext50"
    conv(net, "conv1_7x7s2", n, 3, 224, 64, 7, 2, 3)
    cin, hw = 64, 56
    for stage, (blocks, width, cout) in enumerate([(3, 128, 256), (4, 256, 512), (6, 512, 1024), (3, 1024, 2048)]):
        for b in range(blocks):
            s = 2 if (b == 0 and stage > 0) else 1
            tag = f"s{stage + 2}b{b}"
            conv(net, f"{tag}_1x1a", n, cin, hw, width, 1)
            conv(net, f"{tag}_3x3g32" + ("s2" if s == 2 else ""), n, width, hw, width, 3, s, 1, g=32)
            hw_out = out_size(hw, 3, s, 1)
            conv(net, f"{tag}_1x1b", n, width, hw_out, cout, 1)
            if b == 0:
                conv(net, f"{tag}_downsample", n, cin, hw, cout, 1, s, 0)
            cin, hw = cout, hw_out


def densenet121(n=16):
    net = "densenet121"
    conv(net, "conv0_7x7s2", n, 3, 224, 64, 7, 2, 3)
    c, hw = 64, 56
    for bi, count in enumerate([6, 12, 24, 16]):
        for i in range(count):
            conv(net, f"db{bi + 1}_l{i + 1}_1x1", n, c + 32 * i, hw, 128, 1)
            conv(net, f"db{bi + 1}_l{i + 1}_3x3", n, 128, hw, 32, 3)
        c += 32 * count
        if bi < 3:
            conv(net, f"trans{bi + 1}_1x1", n, c, hw, c // 2, 1)
            c, hw = c // 2, hw // 2


def yolov3(n=8):
    net = "yolov3"
    conv(net, "dn_conv0", n, 3, 416, 32, 3)
    c, hw = 32, 416
    for stage, reps in enumerate([1, 2, 8, 8, 4]):
        conv(net, f"dn_down{stage + 1}", n, c, hw, 2 * c, 3, 2, 1)
        c, hw = 2 * c, hw // 2
        for r in range(reps):
            conv(net, f"dn_s{stage + 1}_r{r}_1x1", n, c, hw, c // 2, 1)
            conv(net, f"dn_s{stage + 1}_r{r}_3x3", n, c // 2, hw, c, 3)
    # Heads: five alternating 1x1 / 3x3 convs, a 3x3 and the 1x1 detector; routes upsample x2 and
    # concatenate with the backbone's 512- (26x26) and 256-channel (52x52) maps.
    for head, (cin, hw, mid) in enumerate([(1024, 13, 512), (768, 26, 256), (384, 52, 128)]):
        c = cin
        for i in range(3):
            conv(net, f"head{head}_1x1_{i}", n, c, hw, mid, 1)
            if i < 2:
                conv(net, f"head{head}_3x3_{i}", n, mid, hw, 2 * mid, 3)
                c = 2 * mid
        conv(net, f"head{head}_3x3_out", n, mid, hw, 2 * mid, 3)
        conv(net, f"head{head}_detect", n, 2 * mid, hw, 255, 1)
        if head < 2:
            conv(net, f"route{head}_1x1", n, mid, hw, mid // 2, 1)


def unet(n=2):
    net = "unet"
    c, hw = 1, 572
    enc = []
    for i, k in enumerate([64, 128, 256, 512, 1024]):
        conv(net, f"enc{i + 1}_a", n, c, hw, k, 3, 1, 0)
        conv(net, f"enc{i + 1}_b", n, k, hw - 2, k, 3, 1, 0)
        c, hw = k, hw - 4
        enc.append((k, hw))
        hw //= 2
    hw = enc[-1][1]
    for i, k in enumerate([512, 256, 128, 64]):
        hw = 2 * hw  # 2x2 up-conv (transposed; not listed) to k channels, concatenated with the skip
        conv(net, f"dec{4 - i}_a", n, 2 * k, hw, k, 3, 1, 0)
        conv(net, f"dec{4 - i}_b", n, k, hw - 2, k, 3, 1, 0)
        hw -= 4
    conv(net, "final_1x1", n, 64, hw, 2, 1, 1, 0)


def squeezenet10(n=32):
    net = "squeezenet10"
    conv(net, "conv1_7x7s2", n, 3, 224, 96, 7, 2, 0)
    fires = [(2, 54, 96, 16, 64), (3, 54, 128, 16, 64), (4, 54, 128, 32, 128), (5, 27, 256, 32, 128),
             (6, 27, 256, 48, 192), (7, 27, 384, 48, 192), (8, 27, 384, 64, 256), (9, 13, 512, 64, 256)]
    for i, hw, cin, sq, ex in fires:
        conv(net, f"fire{i}_squeeze", n, cin, hw, sq, 1)
        conv(net, f"fire{i}_expand1x1", n, sq, hw, ex, 1)
        conv(net, f"fire{i}_expand3x3", n, sq, hw, ex, 3)
    conv(net, "conv10_1x1", n, 512, 13, 1000, 1)


def mobilenet_v1(n=32):
    net = "mobilenetv1"
    conv(net, "conv0_3x3s2", n, 3, 224, 32, 3, 2, 1)
    c, hw = 32, 112
    for i, (k, s) in enumerate([(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
                                (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1)]):
        conv(net, f"dw{i + 1}" + ("s2" if s == 2 else ""), n, c, hw, c, 3, s, 1, g=c)
        hw = out_size(hw, 3, s, 1)
        conv(net, f"pw{i + 1}", n, c, hw, k, 1)
        c = k


def alexnet(n=32):
    net = "alexnet"
    conv(net, "conv1_11x11s4", n, 3, 224, 64, 11, 4, 2)
    conv(net, "conv2_5x5", n, 64, 27, 192, 5)
    conv(net, "conv3_3x3", n, 192, 13, 384, 3)
    conv(net, "conv4_3x3", n, 384, 13, 256, 3)
    conv(net, "conv5_3x3", n, 256, 13, 256, 3)


def spell(d):
    s = (f"g{d['g']}" if d["g"] != 1 else "") + f"mb{d['mb']}ic{d['ic']}ih{d['ih']}oc{d['oc']}"
    s += f"oh{out_size(d['ih'], d['kh'], d['sh'], d['ph'])}kh{d['kh']}"
    if d["sh"] != 1:
        s += f"sh{d['sh']}"
    if d["ph"] != 0:
        s += f"ph{d['ph']}"
    return s


def main():
    for f in (googlenet, resnext50, densenet121, yolov3, unet, squeezenet10, mobilenet_v1, alexnet):
        f()
    seen, lines, current = set(), [], None
    for net, name, d in layers:
        s = spell(d)
        if s in seen:
            continue
        seen.add(s)
        if net != current:
            lines.append(f"\n# {net}")
            current = net
        lines.append(f'{s}n"{net}_{name}"')
    head = ["# Forward convolution layers of public networks (generated by make_public_nets.py; see its",
            "# docstring for the sources). One jhdnn-bench problem string per line; identical shapes once.",
            f"# {len(seen)} shapes."]
    open("public-nets.txt", "w").write("\n".join(head + lines) + "\n")
    print(len(seen), "shapes")


if __name__ == "__main__":
    main()
