"""``python -m ember.lite.build`` is ``python -m ember_lite.build`` (see there)."""
from ember_lite.build import build, main  # noqa: F401

if __name__ == "__main__":
    main()
