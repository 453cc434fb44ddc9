"""The fit's solver options (no numpy: the command line shows them at parse time)."""
from __future__ import annotations

from bondsim_ros.solver.options import SolverOptions

# Tighter than simulate's defaults: the fit differentiates solver runs by forward differences,
# a Jacobian good to about rtol / diff_step (fit.core, RCOND), so the tolerance bounds what the
# data can determine.
FIT_OPTIONS = SolverOptions(rtol=1e-7, atol=1e-9)
