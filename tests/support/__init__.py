"""What the test files share: helpers, oracles, the building blocks of fixtures and the paths of
the checkout (:mod:`tests.support.paths`).  ``tests/`` is a package, so a test imports
``from tests.support.vectorlib import load_case``; pytest puts the checkout on ``sys.path`` (the
first directory above ``tests/`` without an ``__init__.py``), and so does the ``spark`` fixture
for its Python workers.  Nothing is imported here: each module is imported by name."""
