"""The WSGI entry point: `gunicorn wsgi:app`, `flask --app wsgi …`."""

import sys

from service import create_app
from service.config import ConfigError
from service.logs import configure_logging

try:
    app = create_app()
except ConfigError as exc:
    # One line naming the setting, not a traceback.
    print(f"gradquiz: configuration error: {exc}", file=sys.stderr)
    sys.exit(2)
configure_logging(app.config["SETTINGS"].log_format, "web")
