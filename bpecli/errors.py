"""The errors a user may see: the CLI prints their message on one line and exits 1."""


class BpecliError(Exception):
    """A problem with the user's input or files; the message is safe to show and says what to do."""


class InputError(BpecliError):
    """An input file is missing, unreadable, empty or not valid text."""


class TokenizerFileError(BpecliError):
    """A tokenizer file is of no known format, corrupt, or of another format version."""


class OutputError(BpecliError):
    """The output location exists already, or cannot be written."""
