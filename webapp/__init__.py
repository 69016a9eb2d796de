"""The browser what-if explorer: a Plotly Dash app over ``sim`` results and ``real`` measurements.

``create_app()`` in :mod:`webapp.app` builds it; ``collsim ui`` serves it on 127.0.0.1.
"""

__all__ = ["app", "callbacks", "cli", "collective", "components", "figures", "helper", "ids", "jobs", "pages", "urlstate"]
