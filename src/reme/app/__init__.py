"""Application core: configuration, component registry, jobs and the application object."""
