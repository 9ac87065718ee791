# Hron et al. 2020: IMDb with GloVe, variable-length attention kernels (H6).
# Library: src/ntkrepro/hron2020/. Report: paper/sections/hron2020.tex.
