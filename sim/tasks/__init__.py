"""Long-horizon tasks: ``registry.make_task(name)`` -> ``base.TaskDefinition`` (imported lazily)."""
