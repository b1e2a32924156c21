"""Server-side apply and the managed fields of writes, as the apiserver keeps them."""
