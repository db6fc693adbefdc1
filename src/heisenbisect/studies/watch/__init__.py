"""`bisect watch`: one step per call over a branch (`cycle`), its stored history (`history`), the
specs it runs from (`specs`) and a regression's bisection, report and hook (`regression`)."""
