"""chorus for Python: Harmony (a drop-in for ``openai_harmony``), format conversion, token
counting and trimming, validation, and a client for the chorus hub.

Submodules: :mod:`chorus.harmony`, :mod:`chorus.formats`, :mod:`chorus.context`,
:mod:`chorus.validate`, :mod:`chorus.hub`
(a client for ``chorus serve``) and :mod:`chorus.handoff` (the seven handoff types).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
