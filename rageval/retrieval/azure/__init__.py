"""The Azure AI Search backend."""
