"""Pre-registered criteria of Hron et al. (2020), claims H1-H6.

Each criterion lives beside the computation it judges (``evaluate_h1`` in :mod:`.gaussianity`,
...); importing this module registers them all with :mod:`ntkrepro.ledger`.
"""

from ntkrepro.hron2020 import average_pooling, gaussianity  # noqa: F401  (H1, H2)
from ntkrepro.hron2020 import imdb  # noqa: F401  (H6)
from ntkrepro.hron2020 import cifar10  # noqa: F401  (H4)
from ntkrepro.hron2020 import convergence  # noqa: F401  (H3)
from ntkrepro.hron2020 import finite_nets  # noqa: F401  (H5)
