"""The FL-R²SP paper's sections of REPORT.md (:func:`.sections.flr2sp_lines`)."""
