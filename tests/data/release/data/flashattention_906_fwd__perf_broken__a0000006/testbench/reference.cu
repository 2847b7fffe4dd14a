// upstream reference kernel (not shipped)
