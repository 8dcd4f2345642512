"""ONNX support: the lowering of plans to ONNX subgraphs and an ONNX backend.

Importing this module imports ``onnx`` (``pip install bcast[onnx]``); ``import bcast``
alone never does.
"""
