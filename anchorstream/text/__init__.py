"""Text: raw records to documents (decode), documents to word ids (tokenize), the vocabulary."""
