"""Development tools of bcast, outside the installed package: run them from a clone of the repository.

- :mod:`tools.tour` (``make tour``, ``python -m tools.tour [--brief]``): every worked example of the
  spec texts, explained and evaluated;
- :mod:`tools.examples`: those examples, as data (the expected results copied from the texts);
- :mod:`tools.reference`: slow, literal element-by-element definitions of each dialect's values,
  the oracles of the tour and of the tests;
- :mod:`tools.gen_onnx_arity` (``python -m tools.gen_onnx_arity``, ``--check``): regenerates
  ``src/bcast/onnx/arity.py``, every ONNX op's input arity per opset, from the installed onnx's schemas.
"""
