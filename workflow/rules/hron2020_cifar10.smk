# Hron et al. 2020: kernel convergence and CIFAR-10 NNGP/NTK benchmark, finite attention nets (H3-H5).
# Library: src/ntkrepro/hron2020/. Report: paper/sections/hron2020.tex.
