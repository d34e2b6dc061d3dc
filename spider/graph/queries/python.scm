; Python definitions and references for the spider code graph.
; Capture names are documented in spider/graph/extract.py.

; --- classes and functions (decorated forms first: their span starts at the first decorator)
(decorated_definition
  definition: (class_definition name: (identifier) @name.definition.class)) @definition.class
(class_definition name: (identifier) @name.definition.class) @definition.class

(decorated_definition
  definition: (function_definition name: (identifier) @name.definition.function)) @definition.function
(function_definition name: (identifier) @name.definition.function) @definition.function

; --- base classes
(class_definition
  superclasses: (argument_list (identifier) @name.reference.inherits)) @reference.inherits
(class_definition
  superclasses: (argument_list
    (attribute object: (_) @receiver.reference.inherits
               attribute: (identifier) @name.reference.inherits))) @reference.inherits

; --- calls
(call function: (identifier) @name.reference.call) @reference.call
(call function: (attribute object: (_) @receiver.reference.call
                           attribute: (identifier) @name.reference.call)) @reference.call

; --- imports
(import_statement name: (dotted_name) @module.reference.import) @reference.import
(import_statement
  name: (aliased_import name: (dotted_name) @module.reference.import
                        alias: (identifier) @alias.reference.import)) @reference.import
(import_from_statement
  module_name: (_) @module.reference.import
  name: (dotted_name) @name.reference.import) @reference.import
(import_from_statement
  module_name: (_) @module.reference.import
  name: (aliased_import name: (dotted_name) @name.reference.import
                        alias: (identifier) @alias.reference.import)) @reference.import
(import_from_statement
  module_name: (_) @module.reference.import
  (wildcard_import) @name.reference.import) @reference.import
