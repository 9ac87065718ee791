# Hazelden, Driscoll, Shlizerman, Shea-Brown (TMLR 2026), The Global Empirical NTK. Claims G1-G4.
# Library: src/ntkrepro/hazelden2026/. Report: paper/sections/hazelden2026.tex. (No rules yet.)
