"""ccomm - an observability-first collective communication library.

The Python package holds the torch.distributed backend: ``import ccomm.torch``
registers the backend "ccomm" (see docs/pytorch.md).
"""

__all__ = ["torch"]
