"""Op records by family. Importing this package registers every op."""
from ember._ops import core  # noqa: F401
from ember._ops import factory  # noqa: F401
from ember._ops import conversion  # noqa: F401
from ember._ops import indexing  # noqa: F401
