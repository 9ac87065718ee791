"""``python -m ntkrepro.ledger``: the ledger's command line (:func:`ntkrepro.ledger.cli.main`).

Runs the CLI of the imported package, so that the claims register into its one registry."""

import sys

from ntkrepro.ledger.cli import main

if __name__ == "__main__":
    sys.exit(main())
