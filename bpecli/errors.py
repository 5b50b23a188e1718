"""The errors a user may see: the CLI prints their message on one line and exits 1."""


class BpecliError(Exception):
    """A problem with the user's input or files; the message is safe to show and says what to do."""


class InputError(BpecliError):
    """An input file is missing, unreadable, empty or not valid text."""


class TokenizerFileError(BpecliError):
    """A tokenizer file is of no known format, corrupt, or of another format version."""


class OutputError(BpecliError):
    """The output location exists already, or cannot be written."""


class DisallowedSpecialError(BpecliError, ValueError):
    """Text holds a special token that encode was told not to accept (tiktoken raises ValueError)."""


class UnknownIdError(BpecliError, KeyError):
    """An id outside the vocabulary (tiktoken raises KeyError)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])
