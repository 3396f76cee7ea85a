"""The package's own tests: the package from this checkout, its pytest plugin, and pytester
(to run small test files through pytest, as a user's suite runs)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # python/: the package
sys.path.insert(0, HERE)  # kernels.py

pytest_plugins = ["ruleproof.pytest_plugin", "pytester"]
