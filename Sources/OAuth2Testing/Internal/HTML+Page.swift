import OAuth2Internals

/// The provider's few HTML pages.
extension HTML {
    static func page(title: String, body: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title></head>
        <body><h1>\(escape(title))</h1>\(body)</body></html>

        """
    }
}
