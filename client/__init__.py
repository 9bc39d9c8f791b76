"""groupcoord package."""
