"""The demo: a small hand-written corpus (20 English sentences into German, Chinese and Arabic) and demo
accounts, so a fresh machine shows every screen. Later stages add their own steps to DEMO_STEPS."""
