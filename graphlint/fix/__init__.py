"""graphlint fix: suggested rewrites applied as verified passes."""
