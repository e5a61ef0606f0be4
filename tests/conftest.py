"""Test-wide environment: headless rendering, no hub access (the runtime environment of every tandem process)."""

from tandem.runtime.environment import prepare_runtime

prepare_runtime()
