# Arda, Cayci, Eryilmaz (AISTATS 2026), shallow transformers under projected GD. Claims A1-A5.
# Library: src/ntkrepro/arda2026/. Report: paper/sections/arda2026.tex. (No rules yet.)
