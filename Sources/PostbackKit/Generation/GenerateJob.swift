/// `postbackd generate`: writes signed test postbacks as JSON Lines.
package struct GenerateJob: Sendable {
    package var options: GeneratorOptions
    /// PEM private keys; each signs the versions of its curve.
    package var keyFiles: [String]

    package init(options: GeneratorOptions, keyFiles: [String]) {
        self.options = options
        self.keyFiles = keyFiles
    }

    /// The signer for ``keyFiles``, or why it cannot be made.
    package func signer() throws -> PostbackSigner {
        var signer = PostbackSigner(p192: nil, p256: nil)
        for path in keyFiles {
            guard let pem = readSmallFile(path) else {
                throw PostbackKitError(.noSuchPath, "\(path): cannot read the key file")
            }
            let key: ECPrivateKey
            do {
                key = try ECPrivateKey(pemRepresentation: pem)
            } catch {
                throw PostbackKitError(.unreadable, "\(path): \(error)")
            }
            switch key.curve {
            case .p192: signer.p192 = key
            case .p256: signer.p256 = key
            }
        }
        return signer
    }

    /// Writes ``GeneratorOptions/count`` lines to `output`; returns how many.
    @discardableResult
    package func run(output: TextOutput) throws -> Int {
        var generator = try PostbackGenerator(options: options, signer: signer())
        var written = 0
        while let line = try generator.nextLine() {
            output.line(line)
            written += 1
        }
        output.flush()
        return written
    }
}
