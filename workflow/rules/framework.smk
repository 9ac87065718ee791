# Framework paper (seed 000), NTKs applied to transformers. Claims F1-F6.
# Library: src/ntkrepro/framework/. Report: paper/sections/framework.tex. (No rules yet.)
