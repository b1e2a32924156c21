"""
``python -m kopf``: the same as the ``kopf`` command.

The public modules are independent siblings (see the import-linter contracts),
so the CLI is resolved at run time rather than imported here.
"""
import importlib

if __name__ == '__main__':
    importlib.import_module('kopf.cli').main()
